#include "serve_runtime.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "core/log.h"
#include "demo_kit.h"

namespace loradesk::cli {

void resolve_default_model(ServeOptions& o) {
    if (!o.engine.model_dir.empty() && !o.demo) return;
    auto kit = find_demo_kit();
    if (!kit)
        throw_expected(ErrorCode::not_found,
                       "no --model given and the demo kit was not found (set LORADESK_DEMO_DIR to a folder with "
                       "model/ and adapters/, or pass --model DIR or --model org/name from the Hugging Face cache)");
    o.engine.model_dir = kit->model_dir;
    for (auto& a : kit->adapters) o.engine.named_adapters.push_back(a);
    if (!kit->adapters.empty())
        o.extra_adapter_roots.push_back(std::filesystem::path(kit->adapters.front().second).parent_path().string());
    log::info("no model given: serving the demo kit ({})", kit->model_dir);
}

ServerHost::ServerHost(const ServeOptions& o) : m_host(o.host) {
    auto made = api::create_engine(o.engine);
    if (!made.ok()) throw_expected(made.status().code, made.status().message);
    m_engine = std::move(made).value();
    server::ServerOptions so;
    so.host = o.host;
    so.port = o.port;
    so.api_key = o.api_key;
    so.metrics_adapter_window_s = o.metrics_adapter_window_s;
    so.tool_call_parser = o.tool_call_parser;
    so.adapter_roots = o.engine.adapter_dirs;
    for (auto& root : o.extra_adapter_roots) so.adapter_roots.push_back(root);
    so.hub_cache_dir = o.hub_cache_dir;
    m_router = std::make_unique<server::Router>(*m_engine, so);
    m_http = std::make_unique<server::HttpServer>(*m_router);
    Status s = m_http->start();
    if (!s.ok()) {
        m_engine->shutdown();
        throw_expected(s.code, s.message);
    }
    log::info("serving {} on {} (OpenAI base URL {}/v1)", m_engine->model().id, address(), address());
}

ServerHost::~ServerHost() { stop(); }

std::string ServerHost::address() const {
    std::string host = m_host.find(':') != std::string::npos ? "[" + m_host + "]" : m_host;
    return "http://" + host + ":" + std::to_string(m_http->port());
}

void ServerHost::stop(std::chrono::milliseconds drain, const std::atomic<bool>* cut_short) {
    if (m_stopped) return;
    m_stopped = true;
    m_router->set_unavailable("the server is shutting down");
    const auto deadline = std::chrono::steady_clock::now() + drain;
    auto busy = [&] {  // HTTP requests in flight too: one being tokenized is not yet in the engine's counts
        api::EngineStats s = m_engine->stats();
        return std::max(s.running + s.waiting, m_http->in_flight());
    };
    int left = busy();
    if (left > 0 && drain.count() > 0)
        log::info("waiting up to {:.1f} s for {} request(s) to finish", double(drain.count()) / 1000, left);
    while (left > 0 && std::chrono::steady_clock::now() < deadline && !(cut_short && cut_short->load())) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        left = busy();
    }
    if (left > 0) log::warn("cancelling {} unfinished request(s)", left);
    // The engine first: cancelling ends every stream and every waiting handler, so the HTTP server's join below
    // never waits on a generation (it did: an abandoned n: 64 request held SIGTERM for 85 s).
    m_engine->shutdown();
    m_http->stop(std::chrono::seconds(2));  // time for cancelled streams to say so and end with [DONE]
}

sigset_t block_stop_signals() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    return signals;
}

void serve_until_stop_signal(ServerHost& host, const sigset_t& stop_signals, std::chrono::seconds drain) {
    constexpr std::chrono::seconds kStopGrace{15};  // cancelling, ending streams, joining threads
    int sig = 0;
    sigwait(&stop_signals, &sig);
    log::info("received {}, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    static std::atomic<bool> cut_short{false};  // read by the detached thread below, even after we return
    // A copy: the thread outlives this call (the parameter is not named `signals`: Qt defines that macro).
    std::thread([signals = stop_signals] {
        int again = 0;
        sigwait(&signals, &again);
        log::warn("second signal: cancelling running requests now");
        cut_short = true;
    }).detach();
    std::thread([limit = drain + kStopGrace] {
        std::this_thread::sleep_for(limit);
        log::error("shutdown did not finish within {} s; exiting without a clean stop", limit.count());
        std::_Exit(3);
    }).detach();
    host.stop(drain, &cut_short);
}

}  // namespace loradesk::cli
