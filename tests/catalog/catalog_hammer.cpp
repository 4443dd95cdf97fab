// Test helper for tst_catalog_crash: writes statistics and small transactions to a catalog as fast as it
// can until it is killed. Prints "ready" once the database is open. Not a test by itself.
#include <cstdio>
#include <string>

#include "catalog/catalog.h"
#include "catalog/stats_sink.h"
#include "core/sha256.h"

using namespace loradesk;
using namespace loradesk::catalog;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: catalog_hammer DB_PATH\n");
        return 2;
    }
    try {
        Catalog c(argv[1]);
        StatsSinkOptions o;
        o.flush_interval = std::chrono::milliseconds(5);
        o.flush_after_events = 5000;
        StatsSink sink(argv[1], o);
        std::printf("ready\n");
        std::fflush(stdout);
        for (uint64_t round = 0;; ++round) {
            for (int i = 0; i < 2000; ++i) {
                StatsEvent e;
                e.digest = sha256_hex("adapter " + std::to_string(i % 10));
                e.prompt_tokens = 7;
                e.completion_tokens = 3;
                e.ttft_ms = double(i % 300);
                e.e2e_ms = double(i % 3000);
                sink.record(e);
            }
            // One transaction that must be all-or-nothing: a counter and the event that explains it.
            Transaction tx(c.db());
            int64_t n = std::stoll(c.setting("hammer_counter").value_or("0")) + 1;
            c.set_setting("hammer_counter", std::to_string(n));
            c.add_event(EventKind::error, "", "hammer", "hammer");
            c.db().exec(round % 2
                            ? "UPDATE adapters SET pinned = 1 - pinned WHERE digest = '" + sha256_hex("extra") + "'"
                            : "SELECT 1");
            tx.commit();
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "catalog_hammer: %s\n", e.what());
        return 1;
    }
}
