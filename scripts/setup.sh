#!/usr/bin/env bash
# Installs the Debian packages ckptd builds and tests with. Idempotent: quiet when all is there.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libboost-dev libspdlog-dev libyaml-cpp-dev libsqlite3-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev sqlite3 python3
  redis-server postgresql-15 python3-redis python3-psycopg2 curl
  python3-grpcio python3-protobuf python3-pip python3-setuptools python3-wheel python3-h2
  libssl-dev openssl
  etcd-server etcd-client spin
  libsystemd-dev grpc-proto prometheus
  clang libclang-rt-14-dev clang-format clang-tidy
  dpkg-dev file systemd zsh fish
  chromium fonts-liberation
  openjdk-17-jdk-headless libgrpc-java libprotobuf-java protobuf-compiler-grpc-java-plugin
  libnetty-java libperfmark-java libgoogle-gson-java libgeronimo-annotation-1.3-spec-java
  libnetty-tcnative-java libnetty-tcnative-jni junit4
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
echo "setup: done"
