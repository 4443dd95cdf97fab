// The tree-walking interpreter state for one render: a chain of variable frames (Jinja2 scoping: a for
// loop body gets a fresh frame per iteration, macros get their own, `if` shares its parent's) plus the
// attribute/item/call rules of Jinja2's sandbox. One Interpreter per render; never shared across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/value.h"

namespace loradesk::jinja {

struct CallArgs {
    ValueList positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

// Binds arguments to parameter names like a Python signature; absent ones are nullopt.
// Throws Failure on unknown keywords, duplicates or too many positionals.
std::vector<std::optional<Value>> bind_args(const CallArgs& args, std::string_view fn,
                                            std::initializer_list<std::string_view> names);

// Frames are shared so that a macro keeps the scope it was defined in alive.
class Frame;
using FramePtr = std::shared_ptr<Frame>;
class Frame {
  public:
    explicit Frame(FramePtr parent = nullptr) : m_parent(std::move(parent)) { m_vars.reserve(4); }
    const Value* find(std::string_view name) const;
    void set(const std::string& name, Value value);

  private:
    FramePtr m_parent;
    std::vector<std::pair<std::string, Value>> m_vars;
};

class Interpreter {
  public:
    explicit Interpreter(FramePtr root) : m_frame(std::move(root)) {}

    const FramePtr& frame() const { return m_frame; }
    // Makes `f` the current frame for the lifetime of the guard.
    class FrameGuard {
      public:
        FrameGuard(Interpreter& in, FramePtr f) : m_in(in), m_prev(std::move(in.m_frame)) { in.m_frame = std::move(f); }
        ~FrameGuard() { m_in.m_frame = std::move(m_prev); }
        FrameGuard(const FrameGuard&) = delete;
        FrameGuard& operator=(const FrameGuard&) = delete;

      private:
        Interpreter& m_in;
        FramePtr m_prev;
    };

    Value lookup(std::string_view name) const;
    Value get_attr(const Value& obj, const std::string& name);  // obj.name: attribute first, then item
    Value get_item(const Value& obj, const Value& key);         // obj[key]: item first, then attribute
    Value call(const Value& callee, CallArgs& args);
    Value filter(const std::string& name, const Value& operand, CallArgs& args);
    bool test(const std::string& name, const Value& operand, CallArgs& args);
    Flow render_body(const Body& body, std::string& out);
    std::string render_to_string(const Body& body);

    // Counts a loop iteration or macro call; fails past kMaxRenderSteps (template_limits.h).
    void step();

    int depth = 0;  // macro recursion guard

  private:
    FramePtr m_frame;
    std::int64_t m_steps = 0;
};

CallArgs eval_args(Interpreter& in, const Arguments& args);

}  // namespace loradesk::jinja
