// Package packaging holds zkconf's Debian package (deb/, make deb) and the
// container image's build script (docker/, for the Dockerfile); it has no
// Go API. Its tests build each and use it for real: they need root,
// lintian, buildah and runc (scripts/ensure-packaging.sh installs them) and
// take minutes, so they run only with ZKCONF_PACKAGING_TEST=1: make
// deb-test, which make test runs.
package packaging
