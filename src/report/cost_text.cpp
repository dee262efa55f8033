// cost_text.cpp — print_run_cost: the estimate, item by item, then the work.
#include "report/cost_text.h"

#include <fmt/format.h>

#include "report/format.h"

namespace kv {

void print_run_cost(std::ostream& out, const RunCost& c, const char* indent) {
  out << fmt::format("{}estimated memory: about {} (on the device {}, on the host {})\n", indent,
                     format_bytes(c.total_bytes()), format_bytes(c.device_bytes()),
                     format_bytes(c.host_bytes()));
  for (const MemoryItem& i : c.memory) {
    if (i.bytes <= 0) continue;
    out << fmt::format("{}  {:<7} {:<20} {:>10}{}\n", indent, i.on_device ? "device" : "host",
                       i.what, format_bytes(i.bytes), i.fields.empty() ? "" : "  " + i.fields);
  }
  out << fmt::format("{}estimated work: {} epoch(s) x about {} token positions in about {} steps; "
                     "reference: {} request(s), about {} position pairs per epoch\n",
                     indent, c.epochs, format_count(c.tokens_per_epoch),
                     format_count(c.steps_per_epoch), c.checked_requests,
                     format_count(c.reference_pairs));
}

}  // namespace kv
