#include "hub/download/pull.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/sha256.h"
#include "hub/download/sha1.h"
#include "hub/hf_cache.h"

namespace loradesk::hub {

namespace fs = std::filesystem;

namespace {

using Stage = PullFileState::Stage;

// An exclusive flock on .locks/<repo folder>/<etag>.lock, the lock huggingface_hub's filelock takes too.
class BlobLock {
  public:
    explicit BlobLock(const fs::path& path) {
        std::error_code ec;
        fs::create_directories(path.parent_path(), ec);
        m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (m_fd < 0) throw_expected(ErrorCode::io, "cannot create the lock file '" + path.string() + "'");
        while (::flock(m_fd, LOCK_EX) != 0 && errno == EINTR) {
        }
    }
    ~BlobLock() {
        if (m_fd >= 0) ::close(m_fd);  // closing releases the lock
    }
    BlobLock(const BlobLock&) = delete;
    BlobLock& operator=(const BlobLock&) = delete;

  private:
    int m_fd = -1;
};

std::string origin_of(const std::string& url) {
    const auto scheme = url.find("://");
    if (scheme == std::string::npos) return {};
    return url.substr(0, url.find('/', scheme + 3));
}

template <class Hasher>
std::string hash_file(const std::string& path, Hasher& h) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw_expected(ErrorCode::io, "cannot read '" + path + "' to check it");
    std::vector<char> buf(std::size_t(1) << 20);
    while (in) {
        in.read(buf.data(), std::streamsize(buf.size()));
        if (in.gcount() > 0) h.update(buf.data(), std::size_t(in.gcount()));
    }
    return h.finish_hex();
}

void write_atomically(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    const fs::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
        if (!out) throw_expected(ErrorCode::io, "cannot write '" + tmp.string() + "'");
    }
    fs::rename(tmp, path);
}

// snapshots/<commit>/<path> -> ../../blobs/<etag> (one more ../ per folder in `path`), replaced atomically.
void link_into_snapshot(const fs::path& snapshot, const std::string& path, const std::string& etag) {
    const fs::path pointer = snapshot / path;
    std::string target;
    for (std::size_t i = 0, n = 2 + std::size_t(std::count(path.begin(), path.end(), '/')); i < n; ++i) target += "../";
    target += "blobs/" + etag;
    std::error_code ec;
    if (fs::is_symlink(pointer, ec) && fs::read_symlink(pointer, ec) == fs::path(target)) return;
    fs::create_directories(pointer.parent_path());
    const fs::path tmp = pointer.string() + ".link" + std::to_string(::getpid());
    fs::remove(tmp, ec);
    fs::create_symlink(target, tmp);
    fs::rename(tmp, pointer);
}

// One pull in flight: the selected files, their states and the workers' shared flags.
struct Job {
    const HubId& id;
    const PullOptions& options;
    HubApi api;
    ModelInfo info;
    std::vector<RepoFile> files;
    fs::path repo_dir, snapshot, locks;

    std::mutex mutex;  // guards progress and serialises the callbacks
    PullProgress progress;
    std::atomic<std::size_t> next{0};
    std::atomic<bool> abort{false};  // user cancel or a refusal that every file would meet
    std::atomic<int64_t> bytes_downloaded{0};
    std::atomic<int> files_downloaded{0}, files_cached{0};

    Job(const HubId& i, const PullOptions& o) : id(i), options(o), api(o.hub) {}

    void set_stage(std::size_t i, Stage stage, const std::string& error = {}) {
        std::lock_guard<std::mutex> lock(mutex);
        PullFileState& f = progress.files[i];
        f.stage = stage;
        f.error = error;
        if (stage == Stage::done || stage == Stage::cached || stage == Stage::failed) {
            if (stage != Stage::failed) ++progress.files_done;
            if (options.on_file) options.on_file(f);
        }
    }
    void add_bytes(std::size_t i, int64_t n) {
        std::lock_guard<std::mutex> lock(mutex);
        progress.files[i].done += n;
        progress.bytes_done += n;
    }
    void set_size(std::size_t i, int64_t size) {
        std::lock_guard<std::mutex> lock(mutex);
        PullFileState& f = progress.files[i];
        if (f.size != size) progress.bytes_total += size - std::max<int64_t>(f.size, 0);
        f.size = size;
    }

    void fetch(HttpSession& http, std::size_t i);
    void download_blob(HttpSession& http, std::size_t i, const FileMetadata& meta, const fs::path& blob);
    void verify(std::size_t i, const fs::path& incomplete, const std::string& etag, int64_t size);
};

void Job::fetch(HttpSession& http, std::size_t i) {
    const RepoFile& file = files[i];
    const FileMetadata meta = api.file_metadata(http, id.repo, info.commit, file.path);
    if (!meta.commit.empty() && meta.commit != info.commit)
        throw_expected(ErrorCode::io, "the Hub served '" + file.path + "' from commit " + meta.commit +
                                          " while listing commit " + info.commit + "; pull again");
    if (!is_blob_hash(meta.etag))
        throw_expected(ErrorCode::corrupt_file, "the Hub's ETag for '" + file.path + "' ('" + meta.etag +
                                                    "') is not a sha256 or git blob id; cannot store it safely");
    if (!file.sha256.empty() && meta.etag != file.sha256)
        throw_expected(ErrorCode::corrupt_file, "the Hub lists sha256 " + file.sha256 + " for '" + file.path +
                                                    "' but serves it as " + meta.etag + "; pull again later");
    const int64_t size = meta.size >= 0 ? meta.size : file.size;
    if (size >= 0) set_size(i, size);
    const fs::path blob = repo_dir / "blobs" / meta.etag;
    BlobLock lock(locks / (meta.etag + ".lock"));
    std::error_code ec;
    if (fs::is_regular_file(blob, ec)) {  // as huggingface_hub: a blob under its final name is complete
        add_bytes(i, int64_t(fs::file_size(blob, ec)));
        link_into_snapshot(snapshot, file.path, meta.etag);
        ++files_cached;
        set_stage(i, Stage::cached);
        return;
    }
    download_blob(http, i, meta, blob);
    link_into_snapshot(snapshot, file.path, meta.etag);
    ++files_downloaded;
    set_stage(i, Stage::done);
}

void Job::download_blob(HttpSession& http, std::size_t i, const FileMetadata& meta, const fs::path& blob) {
    const std::string& path = files[i].path;
    const fs::path incomplete = blob.string() + ".incomplete";
    const int64_t size = progress.files[i].size;
    set_stage(i, Stage::downloading);
    for (int attempt = 0;; ++attempt) {
        std::FILE* out = std::fopen(incomplete.c_str(), "ab");
        if (!out) throw_expected(ErrorCode::io, "cannot write '" + incomplete.string() + "' in the Hugging Face cache");
        std::fseek(out, 0, SEEK_END);
        int64_t offset = std::ftell(out);
        if (size >= 0 && offset > size) {  // longer than the file: start over
            out = std::freopen(incomplete.c_str(), "wb", out);
            if (!out) throw_expected(ErrorCode::io, "cannot rewrite '" + incomplete.string() + "'");
            offset = 0;
        }
        add_bytes(i, offset - progress.files[i].done);
        if (size >= 0 && offset == size) {  // complete from an earlier run; only the check is left
            std::fclose(out);
            break;
        }
        HttpRequest r;
        r.url = meta.location;
        // The token goes to the Hub only, never to the file host it redirects to.
        if (origin_of(r.url) == origin_of(options.hub.endpoint)) r.headers = options.hub.auth_headers();
        r.range_from = offset > 0 ? offset : -1;
        const auto on_status = [&](long status) {
            if (status == 200 && offset > 0) {  // the server ignored the range: the body is the whole file
                std::fflush(out);
                const int rc = ::ftruncate(::fileno(out), 0);  // a failure shows as a size mismatch later
                (void)rc;
                std::fseek(out, 0, SEEK_SET);
                add_bytes(i, -offset);
            }
        };
        const auto on_bytes = [&](std::size_t n) {
            add_bytes(i, int64_t(n));
            bytes_downloaded += int64_t(n);
        };
        const HttpReply reply = http.download(r, out, on_status, on_bytes, &abort);
        const bool flushed = std::fflush(out) == 0 && ::fsync(::fileno(out)) == 0;
        std::fclose(out);
        if (abort.load()) throw_expected(ErrorCode::cancelled, "cancelled");
        if (!flushed) throw_expected(ErrorCode::io, "cannot write '" + incomplete.string() + "' (disk full?)");
        if (reply.status == 416) {  // our partial file does not fit the server's: start over
            fs::remove(incomplete);
            if (attempt < options.retries) continue;
        }
        const bool transient = !reply.transport_error.empty() || reply.status >= 500;
        if (transient && attempt < options.retries) {
            std::this_thread::sleep_for(std::chrono::milliseconds(250 << attempt));
            continue;
        }
        if (!reply.transport_error.empty())
            throw_expected(ErrorCode::io, "the download of '" + path + "' stopped (" + reply.transport_error +
                                              ") after " + std::to_string(options.retries + 1) +
                                              " tries; run the pull again to resume it");
        api.throw_if_refused(reply, id.repo, "'" + path + "' of " + id.repo);
        break;
    }
    set_stage(i, Stage::verifying);
    verify(i, incomplete, meta.etag, size);
    std::error_code ec;
    fs::rename(incomplete, blob, ec);
    if (ec) throw_expected(ErrorCode::io, "cannot move '" + incomplete.string() + "' into place: " + ec.message());
}

// The bytes must be the ones the Hub named; anything else is deleted, so a resume cannot build on bad bytes.
void Job::verify(std::size_t i, const fs::path& incomplete, const std::string& etag, int64_t size) {
    const std::string& path = files[i].path;
    std::error_code ec;
    const int64_t got_size = int64_t(fs::file_size(incomplete, ec));
    std::string problem;
    if (size >= 0 && got_size != size) {
        problem = "it has " + std::to_string(got_size) + " bytes where the Hub said " + std::to_string(size);
    } else if (etag.size() == 64) {
        const std::string got = sha256_of_file(incomplete.string());
        if (got != etag) problem = "its sha256 is " + got + " where the Hub said " + etag;
    } else {
        const std::string got = git_blob_sha1_of_file(incomplete.string());
        if (got != etag) problem = "its git blob id is " + got + " where the Hub said " + etag;
    }
    if (problem.empty()) return;
    fs::remove(incomplete, ec);
    throw_expected(ErrorCode::corrupt_file, "'" + path + "' of " + id.repo + " failed its check: " + problem +
                                                "; the download was deleted. Pull again; if it fails the same way, "
                                                "the file host or a proxy is altering the file");
}

std::vector<RepoFile> select_files(const ModelInfo& info, const PullOptions& o, const HubId& id) {
    std::vector<RepoFile> out;
    for (const RepoFile& f : info.files)
        if (path_included(f.path, o.includes)) out.push_back(f);
    if (out.empty()) {
        std::string listing;
        for (std::size_t k = 0; k < info.files.size() && k < 20; ++k) listing += (k ? ", " : "") + info.files[k].path;
        throw_expected(ErrorCode::not_found,
                       "no file of " + id.text() + " matches --include" +
                           (info.files.empty() ? "; the repository is empty"
                                               : "; it has: " + listing + (info.files.size() > 20 ? ", ..." : "")));
    }
    return out;
}

// One refusal that stopped the pull (gated, rate-limited) is the answer; otherwise every failed file is listed,
// under their common code.
void throw_failures(const HubId& id, const std::vector<std::pair<ErrorCode, std::string>>& errors) {
    std::vector<const std::pair<ErrorCode, std::string>*> failed;
    for (const auto& e : errors) {
        if (e.first == ErrorCode::ok) continue;
        if (e.first == ErrorCode::unauthorized || e.first == ErrorCode::capacity) throw_expected(e.first, e.second);
        failed.push_back(&e);
    }
    if (failed.empty()) return;
    if (failed.size() == 1) throw_expected(failed[0]->first, failed[0]->second);
    ErrorCode code = failed[0]->first;
    std::string text = std::to_string(failed.size()) + " files of " + id.text() + " failed:";
    for (const auto* e : failed) {
        if (e->first != code) code = ErrorCode::io;
        text += "\n  " + e->second;
    }
    throw_expected(code, text);
}

PullResult offline_answer(const HubId& id, const std::string& cache) {
    auto s = find_snapshot(cache, id);
    if (!s)
        throw_expected(ErrorCode::unavailable, "HF_HUB_OFFLINE is set and " + id.text() +
                                                   " is not in the Hugging Face cache (" + cache +
                                                   "): unset HF_HUB_OFFLINE to download it");
    PullResult r;
    r.repo = id.repo;
    r.commit = s->commit;
    r.snapshot = s->path;
    r.offline = true;
    return r;
}

}  // namespace

bool path_included(const std::string& path, const std::vector<std::string>& includes) {
    if (includes.empty()) return true;
    for (std::string pattern : includes) {
        if (!pattern.empty() && pattern.back() == '/') pattern += '*';
        // No FNM_PATHNAME: '*' crosses '/' as in Python's fnmatch, which huggingface_hub uses.
        if (::fnmatch(pattern.c_str(), path.c_str(), 0) == 0) return true;
    }
    return false;
}

std::string sha256_of_file(const std::string& path) {
    Sha256 h;
    return hash_file(path, h);
}

std::string git_blob_sha1_of_file(const std::string& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) throw_expected(ErrorCode::io, "cannot read '" + path + "' to check it");
    Sha1 h;
    const std::string header = "blob " + std::to_string(size);
    h.update(header.c_str(), header.size() + 1);  // with its NUL
    return hash_file(path, h);
}

PullResult pull(const HubId& id, const PullOptions& options) {
    require_hub_id(id.text());  // a HubId built by hand gets the same checks before it becomes a path or URL
    const std::string cache = options.cache_dir.empty() ? hub_cache_dir() : options.cache_dir;
    if (hub_offline()) return offline_answer(id, cache);
    Job job(id, options);
    {
        HttpSession http;
        job.info = job.api.model_info(http, id);
    }
    job.files = select_files(job.info, options, id);
    job.repo_dir = fs::path(cache) / repo_folder_name(id.repo);
    job.snapshot = job.repo_dir / "snapshots" / job.info.commit;
    job.locks = fs::path(cache) / ".locks" / repo_folder_name(id.repo);
    std::error_code ec;
    fs::create_directories(job.repo_dir / "blobs", ec);
    fs::create_directories(job.snapshot, ec);
    if (ec) throw_expected(ErrorCode::io, "cannot create '" + job.snapshot.string() + "': " + ec.message());
    job.progress.repo = id.repo;
    job.progress.commit = job.info.commit;
    job.progress.files_total = int(job.files.size());
    for (const RepoFile& f : job.files) {
        PullFileState state;
        state.path = f.path;
        state.size = f.size;
        job.progress.files.push_back(std::move(state));
        job.progress.bytes_total += std::max<int64_t>(f.size, 0);
    }

    std::vector<std::pair<ErrorCode, std::string>> errors(job.files.size(), {ErrorCode::ok, {}});
    auto worker = [&] {
        try {
            HttpSession http;
            const auto stopped = [&] {
                if (options.cancel && options.cancel->load()) job.abort = true;
                return job.abort.load();
            };
            for (std::size_t i; !stopped() && (i = job.next++) < job.files.size();) {
                try {
                    job.fetch(http, i);
                } catch (const Error& e) {
                    if (e.code() == ErrorCode::cancelled) return;
                    errors[i] = {e.code(), e.what()};
                    job.set_stage(i, Stage::failed, e.what());
                    // Every other file would meet the same refusal: stop at the first.
                    if (e.code() == ErrorCode::unauthorized || e.code() == ErrorCode::capacity) job.abort = true;
                }
            }
        } catch (const std::exception& e) {
            std::lock_guard<std::mutex> lock(job.mutex);
            errors[0] = {ErrorCode::internal, e.what()};
            job.abort = true;
        }
    };
    std::mutex done_mutex;
    std::condition_variable done_cv;
    bool finished = false;
    std::thread reporter([&] {
        std::unique_lock<std::mutex> lock(done_mutex);
        while (!done_cv.wait_for(lock, std::chrono::milliseconds(std::max(10, options.progress_interval_ms)),
                                 [&] { return finished; })) {
            if (options.cancel && options.cancel->load()) job.abort = true;
            if (options.on_progress) {
                std::lock_guard<std::mutex> progress_lock(job.mutex);
                options.on_progress(job.progress);
            }
        }
    });
    std::vector<std::thread> workers;
    for (int k = 0; k < std::max(1, std::min<int>(options.workers, int(job.files.size()))); ++k)
        workers.emplace_back(worker);
    for (std::thread& t : workers) t.join();
    {
        std::lock_guard<std::mutex> lock(done_mutex);
        finished = true;
    }
    done_cv.notify_all();
    reporter.join();
    if (options.on_progress) options.on_progress(job.progress);  // the final state, after every worker

    throw_failures(id, errors);
    if (options.cancel && options.cancel->load())
        throw_expected(ErrorCode::cancelled,
                       "the pull of " + id.text() + " was cancelled; pulling again resumes the partial files");
    if (id.revision_or_main() != job.info.commit)
        write_atomically(job.repo_dir / "refs" / id.revision_or_main(), job.info.commit);

    PullResult r;
    r.repo = id.repo;
    r.commit = job.info.commit;
    r.snapshot = job.snapshot.string();
    r.files_downloaded = job.files_downloaded.load();
    r.files_cached = job.files_cached.load();
    r.bytes_downloaded = job.bytes_downloaded.load();
    return r;
}

}  // namespace loradesk::hub
