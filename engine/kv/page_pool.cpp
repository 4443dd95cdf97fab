// PagePool: free-list stack plus per-page reference counts.
#include "kv/page_pool.h"

#include <string>

#include "core/error.h"

namespace loradesk::kv {

PagePool::PagePool(int n_pages, int page_size) : m_page_size(page_size) {
    if (page_size <= 0)
        throw_expected(ErrorCode::invalid_argument,
                       "KV page size must be positive (got " + std::to_string(page_size) + ")");
    if (n_pages <= 0)
        throw_expected(ErrorCode::invalid_argument,
                       "the KV cache needs at least one page (got " + std::to_string(n_pages) + "); raise --kv-memory");
    m_refs.assign(std::size_t(n_pages), 0);
    m_free.reserve(std::size_t(n_pages));
    for (int32_t p = n_pages - 1; p >= 0; --p) m_free.push_back(p);
}

int PagePool::pages_for_budget(std::size_t budget_bytes, std::size_t page_bytes) {
    if (page_bytes == 0) throw_error(ErrorCode::internal, "runner reported 0 bytes per KV page");
    std::size_t n = budget_bytes / page_bytes;
    if (n == 0)
        throw_expected(ErrorCode::invalid_argument, "the KV memory budget of " + std::to_string(budget_bytes) +
                                                        " bytes holds no page of " + std::to_string(page_bytes) +
                                                        " bytes; raise --kv-memory");
    if (n > std::size_t(INT32_MAX)) n = std::size_t(INT32_MAX);
    return int(n);
}

bool PagePool::allocate(int n, std::vector<int32_t>& out) {
    if (n < 0) throw_error(ErrorCode::internal, "negative page allocation");
    if (n > n_free()) return false;
    for (int i = 0; i < n; ++i) {
        int32_t p = m_free.back();
        m_free.pop_back();
        m_refs[std::size_t(p)] = 1;
        out.push_back(p);
    }
    return true;
}

void PagePool::check(int32_t page) const {
    if (page < 0 || page >= n_pages())
        throw_error(ErrorCode::internal,
                    "KV page " + std::to_string(page) + " is outside the pool of " + std::to_string(n_pages()));
}

void PagePool::add_ref(int32_t page) {
    check(page);
    if (m_refs[std::size_t(page)] == 0)
        throw_error(ErrorCode::internal, "add_ref on free KV page " + std::to_string(page));
    ++m_refs[std::size_t(page)];
}

void PagePool::release(int32_t page) {
    check(page);
    int32_t& r = m_refs[std::size_t(page)];
    if (r == 0)
        throw_error(ErrorCode::internal, "KV page " + std::to_string(page) + " released more often than referenced");
    if (--r == 0) m_free.push_back(page);
}

void PagePool::release_all(const std::vector<int32_t>& pages) {
    for (int32_t p : pages) release(p);
}

int PagePool::ref_count(int32_t page) const {
    check(page);
    return m_refs[std::size_t(page)];
}

}  // namespace loradesk::kv
