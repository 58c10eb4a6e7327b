# Chromium and its WebDriver for the console's browser tests (flow-server/tests/it/browser.rs).
# Sourced by .ci/run, twice: with `ci_install_only` set (in the background, while clippy runs) it
# installs both from the distribution; then it starts chromedriver on a loopback port, exports
# its URL as AGENTFLOW_WEBDRIVER_URL and stops it on exit.
if ! command -v chromedriver >/dev/null || ! command -v chromium >/dev/null; then
    apt_install chromium chromium-driver
fi
[[ -n ${ci_install_only:-} ]] && return 0

chromedriver_port=9515
rm -f /tmp/chromedriver.log
chromedriver --port="$chromedriver_port" --allowed-ips=127.0.0.1 >/tmp/chromedriver.log 2>&1 &
chromedriver_pid=$!
cleanups+=("kill $chromedriver_pid")
for _ in $(seq 1 50); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$chromedriver_port") 2>/dev/null; then break; fi
    sleep 0.2
done
export AGENTFLOW_WEBDRIVER_URL="http://127.0.0.1:$chromedriver_port"
