# zkconf's container image: confagent and confpush, static, on scratch.
#
#   docker build -t zkconf --build-arg VERSION=$(git describe --tags --always) .
#   docker run -v ./confagent.yaml:/etc/confagent/confagent.yaml zkconf
#   docker run ... zkconf exec -- /app/server     # see docs/confagent.md, "Exec mode"
#
# The image holds nothing but the two binaries, CA certificates, a passwd
# file and the directories they use, and runs as user 65532 (confagent).
# There is no shell: check and reload commands (sh -c) cannot run in it. For
# an application that needs them, or exec mode, copy the binary into the
# application's image instead:
#   COPY --from=zkconf /confagent /usr/local/bin/confagent
# examples/kubernetes has both set-ups. packaging's TestContainerImage builds
# the final stage below as written (buildah, offline) on the root file system
# packaging/docker/rootfs.sh makes, and runs it with runc.
ARG GO_VERSION=1.25
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# The replace directives of go.mod name the patched copies in third_party/:
# go mod download reads their go.mod files.
COPY go.mod go.sum ./
COPY third_party/ third_party/
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
RUN VERSION="$VERSION" COMMIT="$COMMIT" packaging/docker/rootfs.sh /out

FROM scratch
COPY --from=build /out/rootfs/ /
COPY --from=build --chown=65532:65532 /out/state/ /var/lib/confagent/
USER 65532:65532
# The HTTP endpoint's usual port (http.listen; 127.0.0.1:9464 unless
# configured otherwise: 0.0.0.0:9464 lets a kubelet probe it).
EXPOSE 9464
ENTRYPOINT ["/confagent"]
CMD ["--config", "/etc/confagent/confagent.yaml"]
