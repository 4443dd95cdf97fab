// Catalog schema (v1 tables, v2 folder digest cache) and the migration runner.
#include "catalog/catalog_schema.h"

#include <fmt/format.h>

#include "catalog/sqlite_db.h"
#include "core/error.h"

namespace loradesk::catalog {
namespace {

// Append new migrations at the end; never edit a released one.
constexpr const char* kMigrations[] = {
    // v1: adapters keyed by content digest; names point at the newest version of a name.
    R"sql(
CREATE TABLE base_models (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    path          TEXT NOT NULL DEFAULT '',
    architecture  TEXT NOT NULL DEFAULT '',
    created_unix  INTEGER NOT NULL
);
CREATE TABLE adapters (
    id               INTEGER PRIMARY KEY,
    digest           TEXT NOT NULL UNIQUE,
    path             TEXT NOT NULL,
    declared_base    TEXT NOT NULL DEFAULT '',
    base_model_id    INTEGER REFERENCES base_models(id) ON DELETE SET NULL,
    compat           TEXT NOT NULL DEFAULT 'unknown' CHECK (compat IN ('compatible', 'incompatible', 'unknown')),
    compat_reason    TEXT NOT NULL DEFAULT '',
    rank             INTEGER NOT NULL DEFAULT 0,
    alpha            REAL NOT NULL DEFAULT 0,
    rslora           INTEGER NOT NULL DEFAULT 0,
    targets          TEXT NOT NULL DEFAULT '',
    layers           TEXT NOT NULL DEFAULT '',
    size_bytes       INTEGER NOT NULL DEFAULT 0,
    dtype            TEXT NOT NULL DEFAULT '',
    signature        TEXT NOT NULL DEFAULT '',
    created_unix     INTEGER NOT NULL,
    last_used_unix   INTEGER NOT NULL DEFAULT 0,
    pinned           INTEGER NOT NULL DEFAULT 0,
    notes            TEXT NOT NULL DEFAULT '',
    tier             TEXT NOT NULL DEFAULT 'disk' CHECK (tier IN ('gpu', 'cpu', 'disk')),
    missing          INTEGER NOT NULL DEFAULT 0,
    requests_total   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX adapters_path ON adapters(path);
CREATE TABLE names (
    name          TEXT PRIMARY KEY,
    adapter_id    INTEGER NOT NULL REFERENCES adapters(id) ON DELETE CASCADE,
    version       INTEGER NOT NULL,  -- the current version of this name (see versions)
    updated_unix  INTEGER NOT NULL
);
CREATE INDEX names_adapter ON names(adapter_id);
CREATE TABLE versions (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    version       INTEGER NOT NULL,
    adapter_id    INTEGER NOT NULL REFERENCES adapters(id) ON DELETE CASCADE,
    path          TEXT NOT NULL,
    created_unix  INTEGER NOT NULL,
    UNIQUE (name, version)
);
CREATE INDEX versions_adapter ON versions(adapter_id);
CREATE TABLE aliases (
    alias  TEXT PRIMARY KEY,
    name   TEXT NOT NULL REFERENCES names(name) ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE TABLE ignored_paths (
    path    TEXT PRIMARY KEY,
    digest  TEXT NOT NULL
);
CREATE TABLE events (
    id          INTEGER PRIMARY KEY,
    time_ms     INTEGER NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('import', 'load', 'unload', 'evict', 'pin', 'unpin', 'error',
                                              'remove', 'missing', 'alias', 'version')),
    adapter_id  INTEGER REFERENCES adapters(id) ON DELETE SET NULL,
    name        TEXT NOT NULL DEFAULT '',
    detail      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_adapter_time ON events(adapter_id, time_ms);
CREATE TABLE settings (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);
-- Per adapter (by digest; '' = the base model alone) per minute. No foreign key: the engine may report
-- traffic for an adapter that was loaded through the API and never imported.
CREATE TABLE stats_minute (
    digest             TEXT NOT NULL,
    minute             INTEGER NOT NULL,
    requests           INTEGER NOT NULL DEFAULT 0,
    prompt_tokens      INTEGER NOT NULL DEFAULT 0,
    cached_tokens      INTEGER NOT NULL DEFAULT 0,
    completion_tokens  INTEGER NOT NULL DEFAULT 0,
    errors             INTEGER NOT NULL DEFAULT 0,
    cold_loads         INTEGER NOT NULL DEFAULT 0,
    load_ms_total      REAL NOT NULL DEFAULT 0,
    ttft_hist          BLOB,
    e2e_hist           BLOB,
    PRIMARY KEY (digest, minute)
) WITHOUT ROWID;
)sql",
    // v2: the digest of every adapter folder seen, by path and the signature of its files (inode, size,
    // mtime, ctime), with the summary and the compatibility verdict, so a restart hashes only new or
    // changed folders. A cache: rows may be dropped at any time; nothing references them.
    R"sql(
CREATE TABLE folder_digests (
    path           TEXT PRIMARY KEY,
    signature      TEXT NOT NULL,
    digest         TEXT NOT NULL,
    declared_base  TEXT NOT NULL DEFAULT '',
    rank           INTEGER NOT NULL DEFAULT 0,
    alpha          REAL NOT NULL DEFAULT 0,
    rslora         INTEGER NOT NULL DEFAULT 0,
    targets        TEXT NOT NULL DEFAULT '',
    layers         TEXT NOT NULL DEFAULT '',
    size_bytes     INTEGER NOT NULL DEFAULT 0,
    dtype          TEXT NOT NULL DEFAULT '',
    compat_key     TEXT NOT NULL DEFAULT '',  -- the base model and limits the verdict was reached against
    compat         TEXT NOT NULL DEFAULT 'unknown' CHECK (compat IN ('compatible', 'incompatible', 'unknown')),
    compat_reason  TEXT NOT NULL DEFAULT '',
    hashed_unix    INTEGER NOT NULL
) WITHOUT ROWID;
)sql",
};

constexpr int kMigrationCount = int(sizeof(kMigrations) / sizeof(kMigrations[0]));
static_assert(kMigrationCount == kSchemaVersion, "kSchemaVersion must equal the number of migrations");

}  // namespace

void prepare_database(Database& db) {
    // The first statement reads the header: a damaged or foreign file fails here with SQLITE_NOTADB.
    int64_t version = db.query_int("PRAGMA user_version").value_or(0);
    if (version > kSchemaVersion)
        throw_expected(ErrorCode::unsupported,
                       fmt::format("catalog database '{}' has schema version {} but this loradesk knows only up to {} "
                                   "(it was written by a newer loradesk): upgrade loradesk, or use another --data-dir",
                                   db.path(), version, kSchemaVersion));
    if (db.read_only()) {
        if (version < kSchemaVersion)
            throw_expected(
                ErrorCode::unsupported,
                fmt::format("catalog database '{}' needs an upgrade (schema {} < {}) but is opened read-only; "
                            "open it once read-write (any loradeskd catalog command does)",
                            db.path(), version, kSchemaVersion));
        db.exec("PRAGMA foreign_keys=ON");
        return;
    }
    db.exec("PRAGMA journal_mode=WAL");
    db.exec("PRAGMA synchronous=NORMAL");
    db.exec("PRAGMA foreign_keys=ON");
    db.exec("PRAGMA cache_size=-16384");  // 16 MiB: a 10,000-adapter catalog stays in memory for listing
    for (int v = int(version); v < kSchemaVersion; ++v) {
        Transaction tx(db);
        // Re-check under the write lock: another process may have migrated meanwhile.
        if (db.query_int("PRAGMA user_version").value_or(0) > v) continue;
        db.exec(kMigrations[v]);
        db.exec(fmt::format("PRAGMA user_version={}", v + 1));
        tx.commit();
    }
}

}  // namespace loradesk::catalog
