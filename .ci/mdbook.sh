# Sourced by .ci/run: installs mdBook (the guide under docs/) from crates.io, pinned, unless
# that version is already on PATH. Only the `search` feature: no `serve`/`watch` dependencies.
MDBOOK_VERSION=0.5.4
if ! mdbook --version 2>/dev/null | grep -q "v$MDBOOK_VERSION"; then
    timeout --kill-after=30s 1200 cargo install mdbook --locked --version "$MDBOOK_VERSION" \
        --no-default-features --features search
fi
