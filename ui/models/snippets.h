// Ready-to-paste client snippets for the Server view: curl, the OpenAI SDKs (Python, JavaScript) and
// IDE assistants (Continue, Cline), all pointing at this server with the chosen model and API key.
#pragma once

#include <QString>

namespace loradesk::ui {

struct SnippetTarget {
    QString baseUrl;  // http://127.0.0.1:8080/v1
    QString apiKey;   // empty = no key configured
    QString model;    // adapter name or the base model id
};

enum class SnippetKind { Curl, Python, JavaScript, Continue, Cline };

QString snippet(SnippetKind kind, const SnippetTarget& target);
QString snippetTitle(SnippetKind kind);
QString baseUrlFor(const QString& host, int port);  // 0.0.0.0 / :: become 127.0.0.1 for clients

}  // namespace loradesk::ui
