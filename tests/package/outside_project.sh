#!/usr/bin/env bash
# outside_project.sh BUILD_DIR [static]: `cmake --install` loom into a fresh
# prefix, then build an outside CMake project with find_package(loom) and
# target_link_libraries(app loom::loom), and the same program with
# pkg-config; both run a custom operator from the installed library (the
# bundled hwspecs found beside it, not in the source tree). With `static`,
# BUILD_DIR holds a static libloom (the Python tier's build/python).
set -uo pipefail
build=$1
kind=${2:-shared}
lib=lib/libloom.so pc_flags=""
[ "$kind" = static ] && lib=lib/libloom.a pc_flags=--static
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$dir/prefix" >"$dir/install.log" 2>&1 || fail "install: $(tail -5 "$dir/install.log")"
for f in include/loom/loom.h $lib bin/loom share/loom/hwspecs/zen4_server.yaml \
         lib/cmake/loom/loomConfig.cmake lib/pkgconfig/loom.pc; do
  [ -e "$dir/prefix/$f" ] || fail "not installed: $f"
done
"$dir/prefix/bin/loom" hwspecs | grep -q zen4_server || fail "the installed CLI does not find the bundled hwspecs"

cmake -S "$here/app" -B "$dir/app" -G Ninja -DCMAKE_PREFIX_PATH="$dir/prefix" >"$dir/cfg.log" 2>&1 ||
  fail "configure: $(tail -20 "$dir/cfg.log")"
cmake --build "$dir/app" >"$dir/build.log" 2>&1 || fail "build: $(tail -20 "$dir/build.log")"
"$dir/app/app" >"$dir/out" 2>&1 || fail "run: $(cat "$dir/out")"
grep -q "^ok" "$dir/out" && grep -q "may read 'X' out of bounds" "$dir/out" || fail "output: $(cat "$dir/out")"
echo "ok: find_package(loom) + loom::loom ($kind)"

PKG_CONFIG_PATH="$dir/prefix/lib/pkgconfig" c++ "$here/app/main.cc" -o "$dir/app_pc" \
  $(PKG_CONFIG_PATH="$dir/prefix/lib/pkgconfig" pkg-config $pc_flags --cflags --libs loom) || fail "pkg-config build"
"$dir/app_pc" | grep -q "^ok" || fail "pkg-config app: $("$dir/app_pc" 2>&1)"
echo "ok: pkg-config loom ($kind)"
