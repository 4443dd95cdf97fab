// SQLite connection, statement and transaction wrappers; error mapping from SQLite result codes.
#include "catalog/sqlite_db.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/log.h"

namespace loradesk::catalog {
namespace {

ErrorCode map_code(int rc) {
    switch (rc & 0xff) {
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
            return ErrorCode::corrupt_file;
        case SQLITE_CANTOPEN:
        case SQLITE_READONLY:
        case SQLITE_IOERR:
        case SQLITE_FULL:
        case SQLITE_PERM:
        case SQLITE_AUTH:
            return ErrorCode::io;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            return ErrorCode::unavailable;
        case SQLITE_CONSTRAINT:
            return ErrorCode::conflict;
        default:
            return ErrorCode::internal;
    }
}

std::string hint(int rc) {
    switch (rc & 0xff) {
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
            return " (the file is damaged or not a SQLite database)";
        case SQLITE_READONLY:
        case SQLITE_PERM:
        case SQLITE_CANTOPEN:
            return " (check that the data directory exists and is writable, or pass --data-dir DIR)";
        case SQLITE_FULL:
            return " (the disk is full)";
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            return " (another process holds the catalog locked; try again)";
        default:
            return "";
    }
}

}  // namespace

int sqlite_primary_code(int rc) { return rc & 0xff; }

Statement::Statement(Database& db, std::string_view sql) : m_db(db) {
    int rc = sqlite3_prepare_v3(db.handle(), sql.data(), int(sql.size()), SQLITE_PREPARE_PERSISTENT, &m_stmt, nullptr);
    if (rc != SQLITE_OK) db.fail(rc, fmt::format("preparing '{}'", sql.substr(0, 80)));
}

Statement::~Statement() { sqlite3_finalize(m_stmt); }

Statement& Statement::bind(int index, int64_t value) {
    int rc = sqlite3_bind_int64(m_stmt, index, value);
    if (rc != SQLITE_OK) m_db.fail(rc, "binding a parameter");
    return *this;
}

Statement& Statement::bind(int index, double value) {
    int rc = sqlite3_bind_double(m_stmt, index, value);
    if (rc != SQLITE_OK) m_db.fail(rc, "binding a parameter");
    return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
    // A default string_view has a null data pointer, which SQLite would bind as NULL rather than ''.
    const char* p = value.data() ? value.data() : "";
    int rc = sqlite3_bind_text64(m_stmt, index, p, value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    if (rc != SQLITE_OK) m_db.fail(rc, "binding a parameter");
    return *this;
}

Statement& Statement::bind_blob(int index, const void* data, std::size_t n) {
    int rc = sqlite3_bind_blob64(m_stmt, index, n ? data : "", n, SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) m_db.fail(rc, "binding a parameter");
    return *this;
}

Statement& Statement::bind_null(int index) {
    int rc = sqlite3_bind_null(m_stmt, index);
    if (rc != SQLITE_OK) m_db.fail(rc, "binding a parameter");
    return *this;
}

bool Statement::step() {
    int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    // Reset so that the statement can be reused after the caller handles the error.
    sqlite3_reset(m_stmt);
    m_db.fail(rc, fmt::format("running '{}'", std::string_view(sqlite3_sql(m_stmt)).substr(0, 80)));
}

void Statement::run() {
    while (step()) {
    }
}

void Statement::reset() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
}

bool Statement::is_null(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_NULL; }
int64_t Statement::column_int(int col) const { return sqlite3_column_int64(m_stmt, col); }
double Statement::column_double(int col) const { return sqlite3_column_double(m_stmt, col); }

std::string Statement::column_text(int col) const {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, col));
    return p ? std::string(p, std::size_t(sqlite3_column_bytes(m_stmt, col))) : std::string();
}

std::vector<uint8_t> Statement::column_blob(int col) const {
    auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(m_stmt, col));
    return p ? std::vector<uint8_t>(p, p + sqlite3_column_bytes(m_stmt, col)) : std::vector<uint8_t>();
}

Database::Database(const std::string& path, Mode mode, int busy_timeout_ms) : m_path(path), m_mode(mode) {
    int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
    if (mode == Mode::read_only)
        flags |= SQLITE_OPEN_READONLY;
    else
        flags |= SQLITE_OPEN_READWRITE | (mode == Mode::read_write_create ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path.c_str(), &m_db, flags, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
        sqlite3_close_v2(m_db);
        m_db = nullptr;
        throw_expected(map_code(rc), fmt::format("cannot open catalog database '{}': {}{}", path, msg, hint(rc)));
    }
    sqlite3_extended_result_codes(m_db, 1);
    sqlite3_busy_timeout(m_db, busy_timeout_ms);
}

Database::~Database() {
    m_cache.clear();  // statements must be finalized before the connection closes
    if (m_db) sqlite3_close_v2(m_db);
}

void Database::exec(std::string_view sql) {
    std::string text(sql);
    char* err = nullptr;
    int rc = sqlite3_exec(m_db, text.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        throw_expected(map_code(rc), fmt::format("catalog database '{}': {} while running '{}'{}", m_path, msg,
                                                 text.substr(0, 80), hint(rc)));
    }
}

Statement& Database::cached(const std::string& sql) {
    auto it = m_cache.find(sql);
    if (it == m_cache.end()) it = m_cache.emplace(sql, std::make_unique<Statement>(*this, sql)).first;
    it->second->reset();
    return *it->second;
}

void Database::reset_cached() {
    for (auto& [sql, st] : m_cache) sqlite3_reset(st->handle());
}

std::optional<int64_t> Database::query_int(std::string_view sql) {
    Statement st(*this, sql);
    if (!st.step() || st.is_null(0)) return std::nullopt;
    return st.column_int(0);
}

void Database::fail(int rc, std::string_view what) const {
    std::string msg = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
    ErrorCode code = map_code(rc);
    auto text = fmt::format("catalog database '{}': {} failed: {}{}", m_path, what, msg, hint(rc));
    if (code == ErrorCode::internal) throw_error(code, text);
    throw_expected(code, text);
}

Transaction::Transaction(Database& db) : m_db(db) { m_db.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
    if (m_done) return;
    m_db.reset_cached();
    // A failed COMMIT may already have rolled back; ROLLBACK then fails harmlessly.
    if (sqlite3_get_autocommit(m_db.handle()) == 0) {
        int rc = sqlite3_exec(m_db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
        if (rc != SQLITE_OK) log::warn("catalog: rollback failed: {}", sqlite3_errstr(rc));
    }
}

void Transaction::commit() {
    m_db.reset_cached();
    m_db.exec("COMMIT");
    m_done = true;
}

}  // namespace loradesk::catalog
