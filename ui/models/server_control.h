// ServerControl: what the Server view needs from the HTTP server — start on host:port with an optional
// API key, stop, and where it listens. The app implements it over engine/server's HttpServer; tests use
// a fake. Called on the GUI thread; start() only binds (fast), serving runs on the server's threads.
#pragma once

#include <string>

#include "core/result.h"

namespace loradesk::ui {

struct ServerConfig {
    std::string host = "127.0.0.1";
    int port = 8080;  // 0 = any free port
    std::string api_key;
};

class ServerControl {
  public:
    virtual ~ServerControl() = default;
    virtual Status start(const ServerConfig& config) = 0;  // conflict when the port is taken
    virtual void stop() = 0;                               // idempotent
    virtual bool running() const = 0;
    virtual int port() const = 0;  // bound port while running
};

}  // namespace loradesk::ui
