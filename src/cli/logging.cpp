// logging.cpp — the stderr logger behind every kvcheck message.
#include "cli/logging.h"

#include <cstdlib>
#include <memory>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace kv::cli {

void setup_logging(Verbosity v) {
  const char* no_color = std::getenv("NO_COLOR");
  auto mode = (no_color && *no_color) ? spdlog::color_mode::never : spdlog::color_mode::automatic;
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(mode);
  auto logger = std::make_shared<spdlog::logger>("kvcheck", std::move(sink));
  logger->set_pattern("%^%l%$: %v");
  switch (v) {
    case Verbosity::quiet: logger->set_level(spdlog::level::warn); break;
    case Verbosity::normal: logger->set_level(spdlog::level::info); break;
    case Verbosity::verbose: logger->set_level(spdlog::level::debug); break;
  }
  // Errors are rare and must not be lost if the process ends right after them.
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace kv::cli
