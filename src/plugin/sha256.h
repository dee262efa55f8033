// sha256.h — SHA-256 of a file, as `sha256sum` prints it: what a result records to say exactly
// which build of a backend library it judged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kv {

// Lowercase hex digest of `n` bytes.
std::string sha256_hex(const uint8_t* data, size_t n);

// Lowercase hex digest of the file's contents; throws std::runtime_error if it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace kv
