// Syntax tree of a parsed template. Nodes are immutable after parsing and shared by concurrent renders;
// evaluation lives in interpreter.cpp (Expr::eval, Stmt::render).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace loradesk::jinja {

class Frame;
class Interpreter;

struct Expr {
    int line = 0;
    virtual ~Expr() = default;
    virtual Value eval(Interpreter& in) const = 0;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Arguments {
    std::vector<ExprPtr> positional;
    std::vector<std::pair<std::string, ExprPtr>> keyword;
};

struct ConstExpr : Expr {
    Value value;
    Value eval(Interpreter& in) const override;
};
struct NameExpr : Expr {
    std::string name;
    Value eval(Interpreter& in) const override;
};
struct ListExpr : Expr {
    std::vector<ExprPtr> items;
    bool tuple = false;
    Value eval(Interpreter& in) const override;
};
struct DictExpr : Expr {
    std::vector<std::pair<ExprPtr, ExprPtr>> items;
    Value eval(Interpreter& in) const override;
};
struct AttrExpr : Expr {  // obj.name
    ExprPtr object;
    std::string name;
    Value eval(Interpreter& in) const override;
};
struct ItemExpr : Expr {  // obj[key]
    ExprPtr object;
    ExprPtr key;
    Value eval(Interpreter& in) const override;
};
struct SliceExpr : Expr {  // obj[start:stop:step], parts optional
    ExprPtr object, start, stop, step;
    Value eval(Interpreter& in) const override;
};
struct CallExpr : Expr {
    ExprPtr callee;
    Arguments args;
    Value eval(Interpreter& in) const override;
};
struct FilterExpr : Expr {  // operand|name(args); operand is null inside {% filter %} blocks
    ExprPtr operand;
    std::string name;
    Arguments args;
    Value eval(Interpreter& in) const override;
};
struct TestExpr : Expr {  // operand is [not] name(args)
    ExprPtr operand;
    std::string name;
    Arguments args;
    bool negated = false;
    Value eval(Interpreter& in) const override;
};
enum class UnaryOp { neg, pos, not_ };
struct UnaryExpr : Expr {
    UnaryOp op;
    ExprPtr operand;
    Value eval(Interpreter& in) const override;
};
enum class BinaryOp { add, sub, mul, div, floordiv, mod, pow, concat, and_, or_ };
struct BinaryExpr : Expr {
    BinaryOp op;
    ExprPtr left, right;
    Value eval(Interpreter& in) const override;
};
enum class CompareOp { eq, ne, lt, le, gt, ge, in, not_in };
struct CompareExpr : Expr {  // chained: a < b < c
    ExprPtr first;
    std::vector<std::pair<CompareOp, ExprPtr>> rest;
    Value eval(Interpreter& in) const override;
};
struct CondExpr : Expr {  // then if test else otherwise (otherwise optional)
    ExprPtr test, then, otherwise;
    Value eval(Interpreter& in) const override;
};

enum class Flow { normal, break_, continue_ };

struct Stmt {
    int line = 0;
    virtual ~Stmt() = default;
    virtual Flow render(Interpreter& in, std::string& out) const = 0;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct TextStmt : Stmt {
    std::string text;
    Flow render(Interpreter& in, std::string& out) const override;
};
struct PrintStmt : Stmt {
    ExprPtr expr;
    Flow render(Interpreter& in, std::string& out) const override;
};
struct IfStmt : Stmt {
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body otherwise;
    Flow render(Interpreter& in, std::string& out) const override;
};
struct ForStmt : Stmt {
    std::vector<std::string> targets;  // one name, or several to unpack
    ExprPtr iter;
    ExprPtr filter;  // `for x in xs if cond`
    Body body, otherwise;
    Flow render(Interpreter& in, std::string& out) const override;
};
struct SetStmt : Stmt {
    std::vector<std::string> targets;  // names (several = unpack)
    std::string ns_attr;               // non-empty: {% set targets[0].ns_attr = value %}
    ExprPtr value;
    Flow render(Interpreter& in, std::string& out) const override;
};
struct SetBlockStmt : Stmt {
    std::string target;
    std::vector<std::unique_ptr<FilterExpr>> filters;
    Body body;
    Flow render(Interpreter& in, std::string& out) const override;
};
struct MacroParam {
    std::string name;
    ExprPtr default_value;
};
struct MacroStmt : Stmt {
    std::string name;
    std::vector<MacroParam> params;
    Body body;
    Flow render(Interpreter& in, std::string& out) const override;
};
struct CallBlockStmt : Stmt {  // {% call [(params)] macro(args) %}body{% endcall %}
    std::unique_ptr<CallExpr> call;
    std::vector<MacroParam> caller_params;
    Body body;
    Flow render(Interpreter& in, std::string& out) const override;
};
struct FilterBlockStmt : Stmt {
    std::vector<std::unique_ptr<FilterExpr>> filters;
    Body body;
    Flow render(Interpreter& in, std::string& out) const override;
};
struct WithStmt : Stmt {  // {% with a = x, b = y %}body{% endwith %}: a scope of its own
    std::vector<std::pair<std::string, ExprPtr>> assignments;
    Body body;
    Flow render(Interpreter& in, std::string& out) const override;
};
struct BodyStmt : Stmt {  // {% generation %} (transformers' assistant mask tag): renders its body
    Body body;
    Flow render(Interpreter& in, std::string& out) const override;
};
struct LoopControlStmt : Stmt {
    Flow flow;
    Flow render(Interpreter& in, std::string& out) const override;
};

}  // namespace loradesk::jinja
