// PagePool: the KV page allocator. Owns page ids 0..n_pages-1 and their reference counts; it never
// touches KV memory itself (the ModelRunner owns the device buffers, indexed by these ids).
// A page is free exactly when its count is 0: holders (sequences, the prefix cache) each take one
// reference and give it back once, so no page can leak or be freed twice without an Error(internal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loradesk::kv {

constexpr int kDefaultPageSize = 16;

// Not thread-safe: the engine loop thread owns it.
class PagePool {
  public:
    PagePool(int n_pages, int page_size = kDefaultPageSize);

    // Pages that fit in `budget_bytes` when one page takes `page_bytes` (ModelRunner::kv_page_bytes).
    // Throws ExpectedError(invalid_argument) when not even one page fits.
    static int pages_for_budget(std::size_t budget_bytes, std::size_t page_bytes);

    int n_pages() const { return int(m_refs.size()); }
    int page_size() const { return m_page_size; }
    int n_free() const { return int(m_free.size()); }
    int n_used() const { return n_pages() - n_free(); }
    // Pages needed to hold n_tokens tokens.
    int pages_for_tokens(int n_tokens) const { return (n_tokens + m_page_size - 1) / m_page_size; }

    // Takes n free pages (reference count 1 each) and appends them to `out`; all or nothing.
    bool allocate(int n, std::vector<int32_t>& out);
    void add_ref(int32_t page);
    // Drops one reference; the page becomes free when none is left.
    void release(int32_t page);
    void release_all(const std::vector<int32_t>& pages);
    int ref_count(int32_t page) const;

  private:
    void check(int32_t page) const;

    int m_page_size;
    std::vector<int32_t> m_refs;
    std::vector<int32_t> m_free;  // stack: the most recently freed page is reused first
};

}  // namespace loradesk::kv
