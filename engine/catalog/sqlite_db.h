// Thin RAII layer over the SQLite C API: a connection (Database), prepared statements (Statement, with a
// per-connection cache) and transactions that roll back in their destructor. SQLite result codes become
// loradesk::Error with a code that says whose fault it is (corrupt file, I/O, busy, constraint).
// Not thread-safe: one Database per thread (readers open their own; WAL lets them run beside the writer).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace loradesk::catalog {

class Database;

class Statement {
  public:
    Statement(Database& db, std::string_view sql);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    // Parameters are 1-based, as in SQLite.
    Statement& bind(int index, int64_t value);
    Statement& bind(int index, int value) { return bind(index, int64_t(value)); }
    Statement& bind(int index, bool value) { return bind(index, int64_t(value ? 1 : 0)); }
    Statement& bind(int index, double value);
    Statement& bind(int index, std::string_view value);
    Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
    Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
    Statement& bind_blob(int index, const void* data, std::size_t n);
    Statement& bind_null(int index);
    template <class... Args>
    Statement& bind_all(const Args&... args) {
        int i = 0;
        (bind(++i, args), ...);
        return *this;
    }

    bool step();   // true while a row is available
    void run();    // steps to completion (for statements without rows)
    void reset();  // ready for reuse; clears bindings

    bool is_null(int col) const;
    int64_t column_int(int col) const;
    double column_double(int col) const;
    std::string column_text(int col) const;
    std::vector<uint8_t> column_blob(int col) const;
    sqlite3_stmt* handle() const { return m_stmt; }

  private:
    Database& m_db;
    sqlite3_stmt* m_stmt = nullptr;
};

class Database {
  public:
    enum class Mode { read_write_create, read_write, read_only };

    // Opens (or creates) the database file. Throws Error(io) when it cannot be opened.
    Database(const std::string& path, Mode mode, int busy_timeout_ms = 5000);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    sqlite3* handle() const { return m_db; }
    const std::string& path() const { return m_path; }
    bool read_only() const { return m_mode == Mode::read_only; }

    void exec(std::string_view sql);  // one or more statements without results
    // A cached prepared statement for hot paths, reset and with cleared bindings. Valid until the next
    // cached() call with the same SQL text; do not hold two uses of the same text at once.
    Statement& cached(const std::string& sql);
    // Resets every cached statement. A statement left on a row keeps its read snapshot open (and blocks
    // WAL checkpoints), so transactions and read scopes call this when they end.
    void reset_cached();
    std::optional<int64_t> query_int(std::string_view sql);  // first column of the first row
    int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(m_db); }
    int changes() const { return sqlite3_changes(m_db); }

    // Throws the Error that matches `rc`, with `what` and SQLite's message for context.
    [[noreturn]] void fail(int rc, std::string_view what) const;

  private:
    sqlite3* m_db = nullptr;
    std::string m_path;
    Mode m_mode;
    std::unordered_map<std::string, std::unique_ptr<Statement>> m_cache;
};

// Resets the connection's cached statements when a read-only sequence of queries ends.
class ReadScope {
  public:
    explicit ReadScope(Database& db) : m_db(db) {}
    ~ReadScope() { m_db.reset_cached(); }
    ReadScope(const ReadScope&) = delete;
    ReadScope& operator=(const ReadScope&) = delete;

  private:
    Database& m_db;
};

// BEGIN IMMEDIATE on construction (writers take the write lock up front, so two writers never deadlock
// upgrading a read lock); ROLLBACK in the destructor unless commit() ran.
class Transaction {
  public:
    explicit Transaction(Database& db);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

  private:
    Database& m_db;
    bool m_done = false;
};

// Maps a SQLite result code onto the engine's ErrorCode classes.
int sqlite_primary_code(int rc);

}  // namespace loradesk::catalog
