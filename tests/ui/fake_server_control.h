// FakeServerControl: a ServerControl for view tests — "binds" unless the port is marked taken.
#pragma once

#include "ui/models/server_control.h"

namespace loradesk::testing {

class FakeServerControl : public ui::ServerControl {
  public:
    int takenPort = -1;
    ui::ServerConfig lastConfig;

    Status start(const ui::ServerConfig& config) override {
        if (config.port == takenPort)
            return Status::failure(ErrorCode::conflict, "port " + std::to_string(config.port) +
                                                            " is in use (another loradesk?); pick another port");
        lastConfig = config;
        m_port = config.port == 0 ? 49152 : config.port;
        m_running = true;
        return Status::success();
    }
    void stop() override { m_running = false; }
    bool running() const override { return m_running; }
    int port() const override { return m_port; }

  private:
    bool m_running = false;
    int m_port = 0;
};

}  // namespace loradesk::testing
