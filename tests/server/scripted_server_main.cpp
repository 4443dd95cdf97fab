// loradesk_scripted_server: the HTTP server on the scripted engine double, for running the JS SDK test
// (tests/js/server_sdk.test.mjs) without a model. Prints "listening on PORT" and serves until stdin closes.
//   loradesk_scripted_server [--port N] [--api-key KEY] [--adapters DIR] [--max-body BYTES]
#include <cstdio>
#include <iostream>
#include <string>

#include "scripted_engine.h"
#include "server/http_server.h"

int main(int argc, char** argv) {
    loradesk::server::ServerOptions options;
    options.port = 0;
    options.keep_alive_ms = 200;
    options.max_body_bytes = 1 << 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string name = argv[i], value = argv[i + 1];
        if (name == "--port")
            options.port = std::stoi(value);
        else if (name == "--api-key")
            options.api_key = value;
        else if (name == "--adapters")
            options.adapter_roots.push_back(value);
        else if (name == "--max-body")
            options.max_body_bytes = std::stoul(value);
        else {
            std::cerr << "unknown option " << name << "\n";
            return 2;
        }
    }
    loradesk::testing::ScriptedEngine engine;
    loradesk::server::Router router(engine, options);
    loradesk::server::HttpServer server(router);
    const loradesk::Status s = server.start();
    if (!s.ok()) {
        std::cerr << s.message << "\n";
        return 1;
    }
    std::cout << "listening on " << server.port() << std::endl;
    for (std::string line; std::getline(std::cin, line);) {
    }
    server.stop();
    return 0;
}
