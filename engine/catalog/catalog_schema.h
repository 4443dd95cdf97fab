// The catalog's SQL schema and its migrations, keyed by PRAGMA user_version (version N = the first N
// migrations applied). Each migration runs in its own transaction together with the version bump, so a
// crash leaves the database at a whole version.
#pragma once

namespace loradesk::catalog {

class Database;

inline constexpr int kSchemaVersion = 2;

// Sets the connection pragmas (WAL, foreign keys, synchronous=NORMAL) and brings the schema up to
// kSchemaVersion. Throws Error(unsupported) for a database written by a newer build, and
// Error(corrupt_file) when the file is not a usable SQLite database.
void prepare_database(Database& db);

}  // namespace loradesk::catalog
