// Package dashboardtest drives confpush serve's dashboard in a real headless
// Chromium (through chromedp) against a real ZooKeeper and real confagent
// processes. It is in the tools module so that the library's go.mod does
// not carry the browser driver. scripts/ensure-chromium.sh installs the
// Debian chromium package (make test and make screenshots run it).
package dashboardtest
