// Small writers for the Prometheus text exposition format 0.0.4: family headers, samples with escaped
// labels, and histograms. Shared by the per-adapter request metrics and the engine-wide families.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/histogram.h"

namespace loradesk::server::prom {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Escapes a label value (\\, \", \n) for the text format.
std::string escape_label_value(const std::string& value);
// A number as the format wants it (shortest round-trip form).
std::string num(double v);
void family(std::string& out, const std::string& name, const char* type, const char* help);
void sample(std::string& out, const std::string& name, const Labels& labels, double value);
// _bucket (cumulative, with +Inf), _sum and _count lines of one histogram under `labels`.
void histogram(std::string& out, const std::string& name, const Labels& labels, const Histogram& h);

}  // namespace loradesk::server::prom
