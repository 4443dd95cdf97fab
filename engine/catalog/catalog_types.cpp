// Names of the catalog's enums, as stored in the database and printed by the CLI.
#include "catalog/catalog_types.h"

#include <array>
#include <utility>

namespace loradesk::catalog {
namespace {

constexpr std::array<std::pair<EventKind, std::string_view>, 11> kEventNames{{
    {EventKind::import, "import"},
    {EventKind::load, "load"},
    {EventKind::unload, "unload"},
    {EventKind::evict, "evict"},
    {EventKind::pin, "pin"},
    {EventKind::unpin, "unpin"},
    {EventKind::error, "error"},
    {EventKind::remove, "remove"},
    {EventKind::missing, "missing"},
    {EventKind::alias, "alias"},
    {EventKind::version, "version"},
}};

}  // namespace

std::string_view event_kind_name(EventKind kind) {
    for (auto& [k, n] : kEventNames)
        if (k == kind) return n;
    return "error";
}

bool parse_event_kind(std::string_view name, EventKind* out) {
    for (auto& [k, n] : kEventNames)
        if (n == name) {
            *out = k;
            return true;
        }
    return false;
}

std::string_view compat_name(Compat c) {
    switch (c) {
        case Compat::compatible:
            return "compatible";
        case Compat::incompatible:
            return "incompatible";
        case Compat::unknown:
            break;
    }
    return "unknown";
}

Compat parse_compat(std::string_view name) {
    if (name == "compatible") return Compat::compatible;
    if (name == "incompatible") return Compat::incompatible;
    return Compat::unknown;
}

std::string_view tier_name(Tier t) {
    switch (t) {
        case Tier::gpu:
            return "gpu";
        case Tier::cpu:
            return "cpu";
        case Tier::disk:
            break;
    }
    return "disk";
}

bool parse_tier(std::string_view name, Tier* out) {
    if (name == "gpu")
        *out = Tier::gpu;
    else if (name == "cpu")
        *out = Tier::cpu;
    else if (name == "disk")
        *out = Tier::disk;
    else
        return false;
    return true;
}

bool parse_sort_key(std::string_view name, SortKey* out) {
    if (name == "name")
        *out = SortKey::name;
    else if (name == "last-used" || name == "last_used")
        *out = SortKey::last_used;
    else if (name == "requests")
        *out = SortKey::requests;
    else if (name == "size")
        *out = SortKey::size;
    else
        return false;
    return true;
}

}  // namespace loradesk::catalog
