// folder_signature(): inode, size and times of an adapter folder's two files.
#include "model/adapter_folder.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>

namespace loradesk::model {

std::string folder_signature(const std::string& dir) {
    std::string sig;
    for (const char* file : {"adapter_config.json", "adapter_model.safetensors"}) {
        struct stat st {};
        const std::string p = (std::filesystem::path(dir) / file).string();
        if (::stat(p.c_str(), &st) != 0) {
            sig += fmt::format("{}:-;", file);
            continue;
        }
        sig += fmt::format("{}:{}:{}:{}.{:09}:{}.{:09};", file, uint64_t(st.st_ino), int64_t(st.st_size),
                           int64_t(st.st_mtim.tv_sec), int64_t(st.st_mtim.tv_nsec), int64_t(st.st_ctim.tv_sec),
                           int64_t(st.st_ctim.tv_nsec));
    }
    return sig;
}

}  // namespace loradesk::model
