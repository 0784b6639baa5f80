// Files that loom keeps between runs (the host spec, kernel caches): where
// they live and how they are written so that a crash or a concurrent writer
// never leaves a torn file behind.
#pragma once

#include <optional>
#include <string>

namespace loom {

// $LOOM_CACHE_DIR, else $XDG_CACHE_HOME/loom, else $HOME/.cache/loom (else
// /tmp/loom-cache-<uid>). Created on first use; throws UserError naming the
// directory when it cannot be.
std::string cache_directory();

// The bundled hwspecs: $LOOM_HWSPEC_DIR, else share/loom/hwspecs beside or
// above the file that holds this code (the installed or built library, or
// an executable linking it statically). Empty when none exists.
std::string hwspec_directory();

// A helper program shipped with loom (e.g. loom-opencl-runner): $<ENV_NAME>
// when set, else found beside or above the file that holds this code, as
// hwspec_directory() (build tree: the build root; installed: bin/ or
// libexec/loom/). Empty when none exists.
std::string helper_program(const std::string& name, const char* env_name);

// mkdir -p; UserError naming the `role` and the directory when it cannot be made.
void create_directories(const std::string& dir, const std::string& role);

// Writes `contents` to a temporary file beside `path`, flushes it to disk and
// renames it over `path`: readers see the old file or the new one, never a
// part. Returns an error message, empty on success.
std::string write_file_atomically(const std::string& path, const std::string& contents);

// The whole file, or nothing when it cannot be read.
std::optional<std::string> read_whole_file(const std::string& path);

// FNV-1a, 64 bits, as 16 hex digits: a checksum of a file's contents.
std::string fnv1a_hex(const std::string& text);

// `body` followed by a last line "# checksum: <fnv1a_hex(body)>", and back:
// the body when the checksum line is present and matches, nothing when the
// file was truncated or edited.
std::string with_checksum_line(const std::string& body);
std::optional<std::string> body_if_checksum_matches(const std::string& text);

}  // namespace loom
