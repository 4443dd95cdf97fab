// Catalog: the folder digest cache (table folder_digests, schema v2). Maps an adapter folder's path to
// the digest and summary it had when its files had a given signature, so that the engine hashes only
// folders that are new or changed. Plain reads and single-statement writes.
#include <fmt/format.h>

#include "catalog/catalog.h"
#include "catalog/catalog_text.h"

namespace loradesk::catalog {
namespace {

constexpr const char* kColumns =
    "path, signature, digest, declared_base, rank, alpha, rslora, targets, layers, size_bytes, dtype, compat_key, "
    "compat, compat_reason, hashed_unix";

FolderDigest read_row(const Statement& st) {
    FolderDigest f;
    f.path = st.column_text(0);
    f.signature = st.column_text(1);
    model::AdapterSummary& s = f.summary;
    s.digest = st.column_text(2);
    s.path = f.path;
    s.signature = f.signature;
    s.base_model = st.column_text(3);
    s.rank = int(st.column_int(4));
    s.alpha = float(st.column_double(5));
    s.rslora = st.column_int(6) != 0;
    s.targets = split_list(st.column_text(7));
    s.layers = split_int_list(st.column_text(8));
    s.size_bytes = std::size_t(st.column_int(9));
    s.dtype = st.column_text(10);
    f.compat_key = st.column_text(11);
    f.compat = parse_compat(st.column_text(12));
    f.compat_reason = st.column_text(13);
    f.hashed_unix = st.column_int(14);
    return f;
}

}  // namespace

std::optional<FolderDigest> Catalog::folder_digest(const std::string& path) {
    ReadScope scope(*m_db);
    auto& st = m_db->cached(fmt::format("SELECT {} FROM folder_digests WHERE path = ?", kColumns));
    st.bind(1, path);
    if (!st.step()) return std::nullopt;
    return read_row(st);
}

std::map<std::string, FolderDigest> Catalog::folder_digests() {
    ReadScope scope(*m_db);
    auto& st = m_db->cached(fmt::format("SELECT {} FROM folder_digests", kColumns));
    std::map<std::string, FolderDigest> out;
    while (st.step()) {
        FolderDigest f = read_row(st);
        std::string path = f.path;
        out.emplace(std::move(path), std::move(f));
    }
    return out;
}

void Catalog::put_folder_digest(const FolderDigest& f) {
    const model::AdapterSummary& s = f.summary;
    auto& st =
        m_db->cached(fmt::format("INSERT OR REPLACE INTO folder_digests({}) VALUES "
                                 "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                 kColumns));
    st.bind(1, f.path).bind(2, f.signature).bind(3, s.digest).bind(4, s.base_model).bind(5, s.rank);
    st.bind(6, double(s.alpha)).bind(7, s.rslora).bind(8, join_list(s.targets)).bind(9, join_list(s.layers));
    st.bind(10, int64_t(s.size_bytes)).bind(11, s.dtype).bind(12, f.compat_key).bind(13, compat_name(f.compat));
    st.bind(14, f.compat_reason).bind(15, f.hashed_unix).run();
}

void Catalog::forget_folder_digest(const std::string& path) {
    m_db->cached("DELETE FROM folder_digests WHERE path = ?").bind(1, path).run();
}

std::map<std::string, int64_t> Catalog::content_created_times() {
    ReadScope scope(*m_db);
    auto& st = m_db->cached("SELECT digest, created_unix FROM adapters");
    std::map<std::string, int64_t> out;
    while (st.step()) out.emplace(st.column_text(0), st.column_int(1));
    return out;
}

int64_t Catalog::content_created_unix(const std::string& digest) {
    ReadScope scope(*m_db);
    auto& st = m_db->cached("SELECT created_unix FROM adapters WHERE digest = ?");
    st.bind(1, digest);
    return st.step() ? st.column_int(0) : 0;
}

}  // namespace loradesk::catalog
