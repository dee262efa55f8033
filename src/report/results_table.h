// results_table.h — stored results as a table, one row per run (`kvcheck summarize`), or one row
// per run and epoch (`summarize --epochs`: how a run degrades epoch by epoch, the seeds table of
// results/seeds.md): as text for a terminal, or as Markdown for a CI job summary
// ($GITHUB_STEP_SUMMARY) or results/.
#pragma once

#include <ostream>
#include <vector>

#include "report/result_record.h"

namespace kv {

void print_results_table(std::ostream& os, const std::vector<ResultRecord>& records);
void print_results_markdown(std::ostream& os, const std::vector<ResultRecord>& records,
                            const RunSummary& summary);
void print_epochs_table(std::ostream& os, const std::vector<ResultRecord>& records,
                        bool markdown);

}  // namespace kv
