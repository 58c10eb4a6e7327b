# Chromium for the tests that load pages in a real browser (sourced by .ci/run). Headless: no
# display needed. Debian names the package `chromium`.
if ! command -v chromium >/dev/null 2>&1; then
    apt_install chromium
fi
