// Catalog: opening (paths, damaged files, start fresh) and every write. Reads are in catalog_query.cpp.
#include "catalog/catalog.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "catalog/catalog_schema.h"
#include "catalog/catalog_text.h"
#include "core/error.h"
#include "core/log.h"
#include "model/adapter_name.h"

namespace loradesk::catalog {
namespace fs = std::filesystem;

namespace {

int64_t now_unix() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void insert_event(Database& db, EventKind kind, std::optional<int64_t> adapter_id, const std::string& name,
                  const std::string& detail) {
    auto& st = db.cached("INSERT INTO events(time_ms, kind, adapter_id, name, detail) VALUES (?, ?, ?, ?, ?)");
    st.bind(1, now_ms()).bind(2, event_kind_name(kind));
    if (adapter_id)
        st.bind(3, *adapter_id);
    else
        st.bind_null(3);
    st.bind(4, name).bind(5, detail).run();
}

const char* kStartFreshHint =
    "to start over with an empty catalog, run again with --start-fresh (the damaged file is kept as "
    "catalog.sqlite3.corrupt-<timestamp>)";

}  // namespace

std::string catalog_path_in(const std::string& data_dir, bool create) {
    fs::path dir(data_dir);
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
        throw_expected(ErrorCode::io, fmt::format("data directory '{}' is a file, not a directory: pass another "
                                                  "--data-dir DIR",
                                                  data_dir));
    if (create && !fs::exists(dir, ec)) {
        fs::create_directories(dir, ec);
        if (ec)
            throw_expected(ErrorCode::io, fmt::format("cannot create data directory '{}': {} (pass another --data-dir "
                                                      "DIR or fix the permissions)",
                                                      data_dir, ec.message()));
    }
    return (dir / kCatalogFileName).string();
}

std::string move_aside(const std::string& db_path) {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    std::string target = db_path + ".corrupt-" + stamp;
    for (int i = 1; fs::exists(target); ++i) target = fmt::format("{}.corrupt-{}-{}", db_path, stamp, i);
    std::error_code ec;
    fs::rename(db_path, target, ec);
    if (ec)
        throw_expected(ErrorCode::io, fmt::format("cannot move damaged catalog '{}' aside to '{}': {}", db_path, target,
                                                  ec.message()));
    // The journal files belong to the damaged database: keep them beside it, never replay them into a new one.
    for (const char* suffix : {"-wal", "-shm"})
        if (fs::exists(db_path + suffix)) fs::rename(db_path + suffix, target + suffix, ec);
    return target;
}

Catalog::Catalog(const std::string& db_path, CatalogOptions options) : m_path(db_path) {
    std::error_code ec;
    if (fs::is_directory(m_path, ec))
        throw_expected(ErrorCode::io, fmt::format("catalog database '{}' is a directory; move it away or pass another "
                                                  "--data-dir DIR",
                                                  m_path));
    if (!options.read_only) {
        fs::path dir = fs::path(m_path).parent_path();
        if (dir.empty()) dir = ".";
        if (!fs::is_directory(dir, ec))
            throw_expected(ErrorCode::io,
                           fmt::format("data directory '{}' does not exist (pass --data-dir DIR)", dir.string()));
        // WAL needs to create catalog.sqlite3-wal/-shm next to the database, so the directory must be writable.
        if (::access(dir.c_str(), W_OK) != 0)
            throw_expected(ErrorCode::io, fmt::format("data directory '{}' is not writable ({}): fix its permissions "
                                                      "or pass another --data-dir DIR",
                                                      dir.string(), std::strerror(errno)));
    }
    try {
        open(options);
    } catch (const Error& e) {
        if (e.code() != ErrorCode::corrupt_file) throw;
        if (!options.start_fresh_if_corrupt || options.read_only)
            throw_expected(ErrorCode::corrupt_file, fmt::format("{}; {}", e.what(), kStartFreshHint));
        m_db.reset();
        m_moved_aside = move_aside(m_path);
        log::warn("catalog: '{}' was damaged ({}); moved it to '{}' and started a new catalog", m_path, e.what(),
                  m_moved_aside);
        open(options);
    }
}

void Catalog::open(CatalogOptions options) {
    auto mode = options.read_only ? Database::Mode::read_only : Database::Mode::read_write_create;
    m_db = std::make_unique<Database>(m_path, mode, options.busy_timeout_ms);
    prepare_database(*m_db);
    std::string check = integrity_check();
    if (check != "ok")
        throw_expected(ErrorCode::corrupt_file,
                       fmt::format("catalog database '{}' is damaged (integrity check: {})", m_path, check));
}

std::string Catalog::integrity_check() {
    Statement st(*m_db, "PRAGMA quick_check(1)");
    return st.step() ? st.column_text(0) : std::string("no result");
}

int64_t Catalog::register_base_model(const std::string& name, const std::string& path,
                                     const std::string& architecture) {
    Transaction tx(*m_db);
    m_db->cached(
            "INSERT INTO base_models(name, path, architecture, created_unix) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET path = excluded.path, architecture = excluded.architecture")
        .bind_all(name, path, architecture, now_unix())
        .run();
    auto& st = m_db->cached("SELECT id FROM base_models WHERE name = ?");
    st.bind(1, name);
    st.step();
    int64_t id = st.column_int(0);
    tx.commit();
    return id;
}

int64_t Catalog::head_adapter_id(const std::string& name) {
    auto& st = m_db->cached("SELECT adapter_id FROM names WHERE name = ?");
    st.bind(1, name);
    return st.step() ? st.column_int(0) : 0;
}

namespace {

void check_registrable(const model::AdapterSummary& s, const Compatibility& compat) {
    if (s.digest.empty() || s.name.empty())
        throw_expected(ErrorCode::invalid_argument,
                       fmt::format("cannot register adapter at '{}': it has no {} (summarize the folder first)", s.path,
                                   s.digest.empty() ? "digest" : "name"));
    model::check_adapter_name(s.name, compat.base_model);
}

}  // namespace

RegisterResult Catalog::register_adapter(const model::AdapterSummary& s, const Compatibility& compat,
                                         const std::string& signature) {
    check_registrable(s, compat);
    Transaction tx(*m_db);
    RegisterResult result = register_in_transaction(s, compat, signature);
    tx.commit();
    return result;
}

std::vector<RegisterResult> Catalog::register_adapters(const std::vector<AdapterRegistration>& batch) {
    for (auto& r : batch) check_registrable(r.summary, r.compat);  // before any write: all or nothing
    std::vector<RegisterResult> out;
    out.reserve(batch.size());
    Transaction tx(*m_db);
    for (auto& r : batch) out.push_back(register_in_transaction(r.summary, r.compat, r.summary.signature));
    tx.commit();
    return out;
}

RegisterResult Catalog::register_in_transaction(const model::AdapterSummary& s, const Compatibility& compat,
                                                const std::string& signature) {
    std::optional<int64_t> base_id;
    if (!compat.base_model.empty()) {
        auto& st = m_db->cached("SELECT id FROM base_models WHERE name = ?");
        st.bind(1, compat.base_model);
        if (st.step()) base_id = st.column_int(0);
    }
    auto& up = m_db->cached(
        "INSERT INTO adapters(digest, path, declared_base, base_model_id, compat, compat_reason, rank, alpha, rslora, "
        "targets, layers, size_bytes, dtype, signature, created_unix) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
        "ON CONFLICT(digest) DO UPDATE SET path = excluded.path, declared_base = excluded.declared_base, "
        "base_model_id = excluded.base_model_id, compat = excluded.compat, compat_reason = excluded.compat_reason, "
        "signature = excluded.signature, missing = 0");
    up.bind(1, s.digest).bind(2, s.path).bind(3, s.base_model);
    if (base_id)
        up.bind(4, *base_id);
    else
        up.bind_null(4);
    up.bind(5, compat_name(compat.state)).bind(6, compat.reason).bind(7, s.rank).bind(8, double(s.alpha));
    up.bind(9, s.rslora).bind(10, join_list(s.targets)).bind(11, join_list(s.layers)).bind(12, int64_t(s.size_bytes));
    up.bind(13, s.dtype).bind(14, signature).bind(15, now_unix()).run();
    auto& idq = m_db->cached("SELECT id FROM adapters WHERE digest = ?");
    idq.bind(1, s.digest);
    idq.step();
    int64_t id = idq.column_int(0);
    m_db->cached("DELETE FROM ignored_paths WHERE path = ?").bind(1, s.path).run();

    RegisterResult result{RegisterOutcome::unchanged, s.name, s.digest, 1};
    int64_t head = head_adapter_id(s.name);
    auto& vq = m_db->cached("SELECT COALESCE(MAX(version), 0) FROM versions WHERE name = ?");
    vq.bind(1, s.name);
    vq.step();
    int last_version = int(vq.column_int(0));
    if (head == id) {
        result.version = last_version;
        // Same content under the same name, possibly from another folder now: the name's path follows it.
        m_db->cached("UPDATE versions SET path = ? WHERE name = ? AND version = ? AND path <> ?")
            .bind_all(s.path, s.name, last_version, s.path)
            .run();
        return result;
    }
    result.version = last_version + 1;
    m_db->cached("INSERT INTO versions(name, version, adapter_id, path, created_unix) VALUES (?, ?, ?, ?, ?)")
        .bind_all(s.name, result.version, id, s.path, now_unix())
        .run();
    m_db->cached(
            "INSERT INTO names(name, adapter_id, version, updated_unix) VALUES (?, ?, ?, ?) ON CONFLICT(name) "
            "DO UPDATE SET adapter_id = excluded.adapter_id, version = excluded.version, "
            "updated_unix = excluded.updated_unix")
        .bind_all(s.name, id, result.version, now_unix())
        .run();
    if (head == 0) {
        result.outcome = RegisterOutcome::added;
        insert_event(*m_db, EventKind::import, id, s.name, s.path);
    } else {
        result.outcome = RegisterOutcome::new_version;
        // A new version of a pinned adapter stays pinned, and keeps the user's notes.
        m_db->cached(
                "UPDATE adapters SET pinned = (SELECT pinned FROM adapters WHERE id = ?1) | pinned, "
                "notes = CASE WHEN notes = '' THEN (SELECT notes FROM adapters WHERE id = ?1) ELSE notes END "
                "WHERE id = ?2")
            .bind_all(head, id)
            .run();
        insert_event(
            *m_db, EventKind::version, id, s.name,
            fmt::format("v{} {} replaces an earlier version ({})", result.version, s.digest.substr(0, 12), s.path));
    }
    return result;
}

void Catalog::remove_adapter(const std::string& name_or_alias) {
    Transaction tx(*m_db);
    std::string name = require_name(name_or_alias);
    m_db->cached(
            "INSERT OR REPLACE INTO ignored_paths(path, digest) SELECT v.path, a.digest FROM names n JOIN versions "
            "v ON v.name = n.name AND v.version = n.version JOIN adapters a ON a.id = n.adapter_id WHERE n.name = ?")
        .bind(1, name)
        .run();
    // Collect this name's adapters before forgetting the name; drop those no other name still uses.
    std::vector<int64_t> ids;
    auto& q = m_db->cached("SELECT DISTINCT adapter_id FROM versions WHERE name = ?");
    q.bind(1, name);
    while (q.step()) ids.push_back(q.column_int(0));
    m_db->cached("DELETE FROM names WHERE name = ?").bind(1, name).run();  // aliases cascade
    m_db->cached("DELETE FROM versions WHERE name = ?").bind(1, name).run();
    for (int64_t id : ids) {
        auto& used = m_db->cached("SELECT EXISTS(SELECT 1 FROM versions WHERE adapter_id = ?)");
        used.bind(1, id);
        used.step();
        if (used.column_int(0)) continue;
        m_db->cached("DELETE FROM stats_minute WHERE digest = (SELECT digest FROM adapters WHERE id = ?)")
            .bind(1, id)
            .run();
        m_db->cached("DELETE FROM adapters WHERE id = ?").bind(1, id).run();
    }
    insert_event(*m_db, EventKind::remove, std::nullopt, name, "removed from the catalog (files left on disk)");
    tx.commit();
}

void Catalog::set_pinned(const std::string& name_or_alias, bool pinned) {
    Transaction tx(*m_db);
    std::string name = require_name(name_or_alias);
    int64_t id = head_adapter_id(name);
    m_db->cached("UPDATE adapters SET pinned = ? WHERE id = ?").bind_all(pinned, id).run();
    insert_event(*m_db, pinned ? EventKind::pin : EventKind::unpin, id, name, "");
    tx.commit();
}

void Catalog::set_alias(const std::string& alias, const std::string& name_or_alias) {
    model::check_adapter_name(alias, {}, "alias");
    Transaction tx(*m_db);
    std::string name = require_name(name_or_alias);
    if (head_adapter_id(alias) != 0)
        throw_expected(ErrorCode::conflict,
                       fmt::format("'{}' is already an adapter name; choose another alias", alias));
    m_db->cached("INSERT INTO aliases(alias, name) VALUES (?, ?) ON CONFLICT(alias) DO UPDATE SET name = excluded.name")
        .bind_all(alias, name)
        .run();
    insert_event(*m_db, EventKind::alias, head_adapter_id(name), name, alias);
    tx.commit();
}

void Catalog::remove_alias(const std::string& alias) {
    Transaction tx(*m_db);
    m_db->cached("DELETE FROM aliases WHERE alias = ?").bind(1, alias).run();
    if (m_db->changes() == 0) throw_expected(ErrorCode::not_found, fmt::format("no alias '{}' in the catalog", alias));
    tx.commit();
}

void Catalog::set_notes(const std::string& name_or_alias, const std::string& notes) {
    Transaction tx(*m_db);
    int64_t id = head_adapter_id(require_name(name_or_alias));
    m_db->cached("UPDATE adapters SET notes = ? WHERE id = ?").bind_all(notes, id).run();
    tx.commit();
}

void Catalog::set_tier(const std::string& digest, Tier tier) {
    m_db->cached("UPDATE adapters SET tier = ? WHERE digest = ?").bind_all(tier_name(tier), digest).run();
}

void Catalog::set_missing(const std::string& name, bool missing) {
    Transaction tx(*m_db);
    int64_t id = head_adapter_id(require_name(name));
    m_db->cached("UPDATE adapters SET missing = ? WHERE id = ? AND missing <> ?").bind_all(missing, id, missing).run();
    if (m_db->changes() > 0 && missing)
        insert_event(*m_db, EventKind::missing, id, name, "the adapter folder is no longer on disk");
    tx.commit();
}

RegisterResult Catalog::rollback(const std::string& name_or_alias, int version) {
    Transaction tx(*m_db);
    std::string name = require_name(name_or_alias);
    auto& q = m_db->cached(
        "SELECT v.adapter_id, v.path, a.digest FROM versions v JOIN adapters a ON a.id = v.adapter_id "
        "WHERE v.name = ? AND v.version = ?");
    q.bind(1, name).bind(2, version);
    if (!q.step())
        throw_expected(ErrorCode::not_found,
                       fmt::format("adapter '{}' has no version {} (see `catalog show`)", name, version));
    int64_t id = q.column_int(0);
    std::string path = q.column_text(1), digest = q.column_text(2);
    auto& vq = m_db->cached("SELECT MAX(version) FROM versions WHERE name = ?");
    vq.bind(1, name);
    vq.step();
    RegisterResult result{RegisterOutcome::new_version, name, digest, int(vq.column_int(0)) + 1};
    m_db->cached("INSERT INTO versions(name, version, adapter_id, path, created_unix) VALUES (?, ?, ?, ?, ?)")
        .bind_all(name, result.version, id, path, now_unix())
        .run();
    m_db->cached("UPDATE names SET adapter_id = ?, version = ?, updated_unix = ? WHERE name = ?")
        .bind_all(id, result.version, now_unix(), name)
        .run();
    insert_event(*m_db, EventKind::version, id, name, fmt::format("v{} rolls back to v{}", result.version, version));
    tx.commit();
    return result;
}

void Catalog::add_event(EventKind kind, const std::string& digest, const std::string& name, const std::string& detail) {
    ReadScope scope(*m_db);
    std::optional<int64_t> id;
    auto& q = m_db->cached("SELECT id FROM adapters WHERE digest = ?");
    q.bind(1, digest);
    if (q.step()) id = q.column_int(0);
    insert_event(*m_db, kind, id, name, detail);
}

void Catalog::set_setting(const std::string& key, const std::string& value) {
    m_db->cached("INSERT INTO settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
        .bind_all(key, value)
        .run();
}

}  // namespace loradesk::catalog
