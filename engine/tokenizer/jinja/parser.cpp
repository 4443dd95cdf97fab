// Jinja2 grammar: statements (if/for/set/macro/call/filter/break/continue/generation) and expressions
// with Jinja2's precedence: condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary <
// postfix/filter/test.
#include "tokenizer/jinja/parser.h"

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/template_error.h"
#include "tokenizer/jinja/template_limits.h"

namespace loradesk::jinja {

namespace {

template <class T>
std::unique_ptr<T> node(int line) {
    auto n = std::make_unique<T>();
    n->line = line;
    return n;
}

class Parser {
  public:
    explicit Parser(std::vector<Token> tokens) : m_tokens(std::move(tokens)) {}

    Body parse_all() {
        std::string end;
        Body body = parse_body({}, &end);
        return body;
    }

  private:
    const Token& cur() const { return m_tokens[m_pos]; }
    const Token& peek(std::size_t k = 1) const { return m_tokens[std::min(m_pos + k, m_tokens.size() - 1)]; }
    void advance() {
        if (m_pos + 1 < m_tokens.size()) ++m_pos;
    }
    bool is_op(const char* op) const { return cur().type == TokenType::op && cur().text == op; }
    bool is_name(const char* name) const { return cur().type == TokenType::name && cur().text == name; }
    bool skip_op(const char* op) {
        if (!is_op(op)) return false;
        advance();
        return true;
    }
    bool skip_name(const char* name) {
        if (!is_name(name)) return false;
        advance();
        return true;
    }

    static std::string describe(const Token& t) {
        switch (t.type) {
            case TokenType::text:
                return "template text";
            case TokenType::var_begin:
                return "'{{'";
            case TokenType::var_end:
                return "'}}'";
            case TokenType::block_begin:
                return "'{%'";
            case TokenType::block_end:
                return "'%}'";
            case TokenType::name:
                return "'" + t.text + "'";
            case TokenType::string:
                return "string literal";
            case TokenType::integer:
            case TokenType::floating:
                return "number '" + t.text + "'";
            case TokenType::op:
                return "'" + t.text + "'";
            case TokenType::eof:
                return "end of template";
        }
        return "token";
    }

    [[noreturn]] void error(const std::string& message) const {
        throw TemplateError(message, cur().line, cur().column);
    }

    // Every recursive descent (nested expression, block, unary operator) holds one for its extent.
    class NestingGuard {
      public:
        explicit NestingGuard(Parser& p) : m_p(p) {
            if (++m_p.m_nesting > kMaxNesting)
                m_p.error("expressions or blocks nested more than " + std::to_string(kMaxNesting) + " levels deep");
        }
        ~NestingGuard() { --m_p.m_nesting; }
        NestingGuard(const NestingGuard&) = delete;
        NestingGuard& operator=(const NestingGuard&) = delete;

      private:
        Parser& m_p;
    };
    void expect_op(const char* op) {
        if (!skip_op(op)) error(std::string("expected '") + op + "', found " + describe(cur()));
    }
    std::string expect_name(const char* what) {
        if (cur().type != TokenType::name) error(std::string("expected ") + what + ", found " + describe(cur()));
        std::string s = cur().text;
        advance();
        return s;
    }
    void expect_block_end() {
        if (cur().type != TokenType::block_end) error("expected end of statement '%}', found " + describe(cur()));
        advance();
    }

    // Parses statements until a {% name %} in `ends`; leaves the stream after that name and reports it.
    Body parse_body(const std::vector<std::string>& ends, std::string* end_found) {
        NestingGuard guard(*this);
        Body body;
        int start_line = m_pos > 0 ? m_tokens[m_pos - 1].line : cur().line;  // the opening tag's line
        while (true) {
            const Token& t = cur();
            if (t.type == TokenType::eof) {
                if (ends.empty()) return body;
                std::string list;
                for (auto& e : ends) list += (list.empty() ? "'" : " or '") + e + "'";
                throw TemplateError("unexpected end of template: missing " + list + " for the block opened here",
                                    start_line);
            }
            if (t.type == TokenType::text) {
                auto s = node<TextStmt>(t.line);
                s->text = t.text;
                body.push_back(std::move(s));
                advance();
            } else if (t.type == TokenType::var_begin) {
                auto s = node<PrintStmt>(t.line);
                advance();
                s->expr = parse_tuple(true);
                if (cur().type != TokenType::var_end)
                    error("expected end of print statement '}}', found " + describe(cur()));
                advance();
                body.push_back(std::move(s));
            } else if (t.type == TokenType::block_begin) {
                advance();
                if (cur().type == TokenType::name)
                    for (auto& e : ends)
                        if (cur().text == e) {
                            *end_found = e;
                            advance();
                            return body;
                        }
                body.push_back(parse_statement());
            } else {
                error("unexpected " + describe(t));
            }
        }
    }

    StmtPtr parse_statement() {
        if (cur().type != TokenType::name) error("expected a statement name after '{%', found " + describe(cur()));
        std::string tag = cur().text;
        int line = cur().line;
        advance();
        if (tag == "if") return parse_if(line);
        if (tag == "for") return parse_for(line);
        if (tag == "set") return parse_set(line);
        if (tag == "macro") return parse_macro(line);
        if (tag == "call") return parse_call_block(line);
        if (tag == "filter") {
            auto s = node<FilterBlockStmt>(line);
            s->filters = parse_filter_chain();
            expect_block_end();
            std::string end;
            s->body = parse_body({"endfilter"}, &end);
            expect_block_end();
            return s;
        }
        if (tag == "generation") {
            auto s = node<BodyStmt>(line);
            expect_block_end();
            std::string end;
            s->body = parse_body({"endgeneration"}, &end);
            expect_block_end();
            return s;
        }
        if (tag == "with") {
            auto s = node<WithStmt>(line);
            while (cur().type != TokenType::block_end) {
                if (!s->assignments.empty()) expect_op(",");
                std::string name = expect_name("a variable name in 'with'");
                expect_op("=");
                s->assignments.emplace_back(name, parse_expression());
            }
            expect_block_end();
            std::string end;
            s->body = parse_body({"endwith"}, &end);
            expect_block_end();
            return s;
        }
        if (tag == "break" || tag == "continue") {
            auto s = node<LoopControlStmt>(line);
            s->flow = tag == "break" ? Flow::break_ : Flow::continue_;
            expect_block_end();
            return s;
        }
        if (tag.rfind("end", 0) == 0 || tag == "else" || tag == "elif")
            throw TemplateError("unexpected '" + tag + "' (no open block it could close here)", line);
        throw TemplateError("unknown tag '" + tag +
                                "' (supported: if, for, set, macro, call, filter, with, raw, break, "
                                "continue, generation)",
                            line);
    }

    StmtPtr parse_if(int line) {
        auto s = node<IfStmt>(line);
        ExprPtr cond = parse_expression();
        while (true) {
            expect_block_end();
            std::string end;
            Body body = parse_body({"elif", "else", "endif"}, &end);
            s->branches.emplace_back(std::move(cond), std::move(body));
            if (end == "elif") {
                cond = parse_expression();
                continue;
            }
            if (end == "else") {
                expect_block_end();
                s->otherwise = parse_body({"endif"}, &end);
            }
            expect_block_end();
            return s;
        }
    }

    StmtPtr parse_for(int line) {
        auto s = node<ForStmt>(line);
        do {
            s->targets.push_back(expect_name("a loop variable name"));
        } while (skip_op(","));
        if (!skip_name("in")) error("expected 'in' in for loop, found " + describe(cur()));
        s->iter = parse_tuple(false);
        if (skip_name("if")) s->filter = parse_expression();
        if (is_name("recursive")) error("recursive loops are not supported");
        expect_block_end();
        std::string end;
        s->body = parse_body({"endfor", "else"}, &end);
        if (end == "else") {
            expect_block_end();
            s->otherwise = parse_body({"endfor"}, &end);
        }
        expect_block_end();
        return s;
    }

    StmtPtr parse_set(int line) {
        std::string first = expect_name("a variable name after 'set'");
        if (skip_op(".")) {
            auto s = node<SetStmt>(line);
            s->targets.push_back(first);
            s->ns_attr = expect_name("an attribute name");
            expect_op("=");
            s->value = parse_tuple(true);
            expect_block_end();
            return s;
        }
        std::vector<std::string> targets{first};
        while (skip_op(",")) targets.push_back(expect_name("a variable name"));
        if (skip_op("=")) {
            auto s = node<SetStmt>(line);
            s->targets = std::move(targets);
            s->value = parse_tuple(true);
            expect_block_end();
            return s;
        }
        if (targets.size() != 1) error("expected '=' after the names to assign");
        auto s = node<SetBlockStmt>(line);
        s->target = first;
        if (skip_op("|")) s->filters = parse_filter_chain();
        expect_block_end();
        std::string end;
        s->body = parse_body({"endset"}, &end);
        expect_block_end();
        return s;
    }

    std::vector<MacroParam> parse_params() {
        std::vector<MacroParam> params;
        expect_op("(");
        while (!is_op(")")) {
            if (!params.empty()) expect_op(",");
            if (is_op(")")) break;
            MacroParam p;
            p.name = expect_name("a parameter name");
            if (skip_op("=")) p.default_value = parse_expression();
            params.push_back(std::move(p));
        }
        expect_op(")");
        return params;
    }

    StmtPtr parse_macro(int line) {
        auto s = node<MacroStmt>(line);
        s->name = expect_name("a macro name");
        s->params = parse_params();
        expect_block_end();
        std::string end;
        s->body = parse_body({"endmacro"}, &end);
        if (cur().type == TokenType::name && cur().text == s->name) advance();
        expect_block_end();
        return s;
    }

    StmtPtr parse_call_block(int line) {
        auto s = node<CallBlockStmt>(line);
        if (is_op("(")) s->caller_params = parse_params();
        ExprPtr e = parse_expression();
        auto* call = dynamic_cast<CallExpr*>(e.get());
        if (!call) throw TemplateError("{% call %} expects a macro call such as {% call m(x) %}", line);
        e.release();
        s->call.reset(call);
        expect_block_end();
        std::string end;
        s->body = parse_body({"endcall"}, &end);
        expect_block_end();
        return s;
    }

    std::vector<std::unique_ptr<FilterExpr>> parse_filter_chain() {
        std::vector<std::unique_ptr<FilterExpr>> chain;
        do {
            chain.push_back(parse_filter(nullptr));
        } while (skip_op("|"));
        return chain;
    }

    // ---- expressions ----

    ExprPtr parse_tuple(bool with_condexpr) {
        int line = cur().line;
        ExprPtr first = with_condexpr ? parse_expression() : parse_or();
        if (!is_op(",")) return first;
        auto t = node<ListExpr>(line);
        t->tuple = true;
        t->items.push_back(std::move(first));
        while (skip_op(",")) {
            if (cur().type == TokenType::var_end || cur().type == TokenType::block_end || is_op(")")) break;
            t->items.push_back(with_condexpr ? parse_expression() : parse_or());
        }
        return t;
    }

    ExprPtr parse_expression() {
        NestingGuard guard(*this);
        ExprPtr e = parse_or();
        while (is_name("if")) {
            auto c = node<CondExpr>(cur().line);
            advance();
            c->then = std::move(e);
            c->test = parse_or();
            if (skip_name("else")) c->otherwise = parse_expression();
            e = std::move(c);
        }
        return e;
    }

    ExprPtr binary(BinaryOp op, ExprPtr l, ExprPtr r, int line) {
        auto b = node<BinaryExpr>(line);
        b->op = op;
        b->left = std::move(l);
        b->right = std::move(r);
        return b;
    }

    ExprPtr parse_or() {
        ExprPtr e = parse_and();
        while (is_name("or")) {
            int line = cur().line;
            advance();
            e = binary(BinaryOp::or_, std::move(e), parse_and(), line);
        }
        return e;
    }
    ExprPtr parse_and() {
        ExprPtr e = parse_not();
        while (is_name("and")) {
            int line = cur().line;
            advance();
            e = binary(BinaryOp::and_, std::move(e), parse_not(), line);
        }
        return e;
    }
    ExprPtr parse_not() {
        if (is_name("not")) {
            auto u = node<UnaryExpr>(cur().line);
            advance();
            u->op = UnaryOp::not_;
            NestingGuard guard(*this);
            u->operand = parse_not();
            return u;
        }
        return parse_compare();
    }
    ExprPtr parse_compare() {
        int line = cur().line;
        ExprPtr e = parse_math1();
        std::unique_ptr<CompareExpr> cmp;
        while (true) {
            CompareOp op;
            if (skip_op("=="))
                op = CompareOp::eq;
            else if (skip_op("!="))
                op = CompareOp::ne;
            else if (skip_op("<"))
                op = CompareOp::lt;
            else if (skip_op("<="))
                op = CompareOp::le;
            else if (skip_op(">"))
                op = CompareOp::gt;
            else if (skip_op(">="))
                op = CompareOp::ge;
            else if (skip_name("in"))
                op = CompareOp::in;
            else if (is_name("not") && peek().type == TokenType::name && peek().text == "in") {
                advance();
                advance();
                op = CompareOp::not_in;
            } else {
                break;
            }
            if (!cmp) {
                cmp = node<CompareExpr>(line);
                cmp->first = std::move(e);
            }
            cmp->rest.emplace_back(op, parse_math1());
        }
        if (cmp) return cmp;
        return e;
    }
    ExprPtr parse_math1() {
        ExprPtr e = parse_concat();
        while (is_op("+") || is_op("-")) {
            BinaryOp op = is_op("+") ? BinaryOp::add : BinaryOp::sub;
            int line = cur().line;
            advance();
            e = binary(op, std::move(e), parse_concat(), line);
        }
        return e;
    }
    ExprPtr parse_concat() {
        ExprPtr e = parse_math2();
        while (is_op("~")) {
            int line = cur().line;
            advance();
            e = binary(BinaryOp::concat, std::move(e), parse_math2(), line);
        }
        return e;
    }
    ExprPtr parse_math2() {
        ExprPtr e = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            BinaryOp op = is_op("*")    ? BinaryOp::mul
                          : is_op("/")  ? BinaryOp::div
                          : is_op("//") ? BinaryOp::floordiv
                                        : BinaryOp::mod;
            int line = cur().line;
            advance();
            e = binary(op, std::move(e), parse_pow(), line);
        }
        return e;
    }
    ExprPtr parse_pow() {
        ExprPtr e = parse_unary(true);
        while (is_op("**")) {
            int line = cur().line;
            advance();
            e = binary(BinaryOp::pow, std::move(e), parse_unary(true), line);
        }
        return e;
    }
    ExprPtr parse_unary(bool with_filter) {
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            auto u = node<UnaryExpr>(cur().line);
            u->op = is_op("-") ? UnaryOp::neg : UnaryOp::pos;
            advance();
            NestingGuard guard(*this);
            u->operand = parse_unary(false);
            e = std::move(u);
        } else {
            e = parse_primary();
        }
        e = parse_postfix(std::move(e));
        if (with_filter) e = parse_filter_expr(std::move(e));
        return e;
    }

    ExprPtr parse_primary() {
        const Token& t = cur();
        int line = t.line;
        if (t.type == TokenType::name) {
            auto c = node<ConstExpr>(line);
            if (t.text == "true" || t.text == "True")
                c->value = Value::boolean(true);
            else if (t.text == "false" || t.text == "False")
                c->value = Value::boolean(false);
            else if (t.text == "none" || t.text == "None")
                c->value = Value::none();
            else {
                auto n = node<NameExpr>(line);
                n->name = t.text;
                advance();
                return n;
            }
            advance();
            return c;
        }
        if (t.type == TokenType::string) {
            std::string s;
            while (cur().type == TokenType::string) {
                s += cur().text;
                advance();
            }
            auto c = node<ConstExpr>(line);
            c->value = Value::string(std::move(s));
            return c;
        }
        if (t.type == TokenType::integer || t.type == TokenType::floating) {
            auto c = node<ConstExpr>(line);
            c->value = t.type == TokenType::integer ? Value::integer(t.int_value) : Value::floating(t.float_value);
            advance();
            return c;
        }
        if (skip_op("(")) {
            if (skip_op(")")) {
                auto l = node<ListExpr>(line);
                l->tuple = true;
                return l;
            }
            ExprPtr e = parse_tuple(true);
            expect_op(")");
            return e;
        }
        if (skip_op("[")) {
            auto l = node<ListExpr>(line);
            while (!is_op("]")) {
                if (!l->items.empty()) expect_op(",");
                if (is_op("]")) break;
                l->items.push_back(parse_expression());
            }
            expect_op("]");
            return l;
        }
        if (skip_op("{")) {
            auto d = node<DictExpr>(line);
            while (!is_op("}")) {
                if (!d->items.empty()) expect_op(",");
                if (is_op("}")) break;
                ExprPtr k = parse_expression();
                expect_op(":");
                d->items.emplace_back(std::move(k), parse_expression());
            }
            expect_op("}");
            return d;
        }
        error("expected an expression, found " + describe(t));
    }

    ExprPtr parse_postfix(ExprPtr e) {
        while (true) {
            int line = cur().line;
            if (skip_op(".")) {
                if (cur().type == TokenType::integer) {
                    auto it = node<ItemExpr>(line);
                    auto k = node<ConstExpr>(line);
                    k->value = Value::integer(cur().int_value);
                    advance();
                    it->object = std::move(e);
                    it->key = std::move(k);
                    e = std::move(it);
                    continue;
                }
                auto a = node<AttrExpr>(line);
                a->object = std::move(e);
                a->name = expect_name("an attribute name after '.'");
                e = std::move(a);
            } else if (skip_op("[")) {
                e = parse_subscript(std::move(e), line);
            } else if (is_op("(")) {
                auto c = node<CallExpr>(line);
                c->callee = std::move(e);
                c->args = parse_call_args();
                e = std::move(c);
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr object, int line) {
        ExprPtr start, stop, step;
        if (!is_op(":")) {
            start = parse_expression();
            if (skip_op("]")) {
                auto it = node<ItemExpr>(line);
                it->object = std::move(object);
                it->key = std::move(start);
                return it;
            }
        }
        expect_op(":");
        if (!is_op("]") && !is_op(":")) stop = parse_expression();
        if (skip_op(":") && !is_op("]")) step = parse_expression();
        expect_op("]");
        auto s = node<SliceExpr>(line);
        s->object = std::move(object);
        s->start = std::move(start);
        s->stop = std::move(stop);
        s->step = std::move(step);
        return s;
    }

    Arguments parse_call_args() {
        Arguments args;
        expect_op("(");
        bool first = true;
        while (!is_op(")")) {
            if (!first) expect_op(",");
            first = false;
            if (is_op(")")) break;
            if (is_op("*") || is_op("**")) error("*args / **kwargs in calls are not supported");
            if (cur().type == TokenType::name && peek().type == TokenType::op && peek().text == "=") {
                std::string name = cur().text;
                advance();
                advance();
                args.keyword.emplace_back(name, parse_expression());
            } else {
                if (!args.keyword.empty()) error("positional argument follows keyword argument");
                args.positional.push_back(parse_expression());
            }
        }
        expect_op(")");
        return args;
    }

    std::string dotted_name(const char* what) {
        std::string name = expect_name(what);
        while (is_op(".") && peek().type == TokenType::name) {
            advance();
            name += "." + cur().text;
            advance();
        }
        return name;
    }

    std::unique_ptr<FilterExpr> parse_filter(ExprPtr operand) {
        auto f = node<FilterExpr>(cur().line);
        int column = cur().column;
        f->operand = std::move(operand);
        f->name = dotted_name("a filter name");
        // Like Jinja2, unknown filters and tests are compile-time errors.
        if (!find_filter(f->name)) throw TemplateError("unknown filter '" + f->name + "'", f->line, column);
        if (is_op("(")) f->args = parse_call_args();
        return f;
    }

    ExprPtr parse_filter_expr(ExprPtr e) {
        while (true) {
            if (skip_op("|")) {
                e = parse_filter(std::move(e));
            } else if (is_name("is")) {
                auto t = node<TestExpr>(cur().line);
                advance();
                t->negated = skip_name("not");
                int column = cur().column;
                t->name = dotted_name("a test name after 'is'");
                if (!find_test(t->name)) throw TemplateError("unknown test '" + t->name + "'", t->line, column);
                t->operand = std::move(e);
                if (is_op("(")) {
                    t->args = parse_call_args();
                } else if ((cur().type == TokenType::name || cur().type == TokenType::string ||
                            cur().type == TokenType::integer || cur().type == TokenType::floating || is_op("[") ||
                            is_op("{")) &&
                           !is_name("else") && !is_name("or") && !is_name("and")) {
                    if (is_name("is")) error("You cannot chain multiple tests with is");
                    t->args.positional.push_back(parse_postfix(parse_primary()));
                }
                e = std::move(t);
            } else if (is_op("(")) {
                auto c = node<CallExpr>(cur().line);
                c->callee = std::move(e);
                c->args = parse_call_args();
                e = std::move(c);
            } else {
                return e;
            }
        }
    }

    std::vector<Token> m_tokens;
    std::size_t m_pos = 0;
    int m_nesting = 0;  // NestingGuard depth
};

}  // namespace

Body parse_template(std::string_view source) { return Parser(tokenize(source)).parse_all(); }

}  // namespace loradesk::jinja
