// Client snippet text. Keys: an unset key still needs a placeholder for the SDKs, which refuse to run
// without one; the server ignores it when it has no key configured.
#include "ui/models/snippets.h"

namespace loradesk::ui {

namespace {

QString keyOrPlaceholder(const SnippetTarget& t) {
    return t.apiKey.isEmpty() ? QStringLiteral("not-needed") : t.apiKey;
}

QString curl(const SnippetTarget& t) {
    QString auth =
        t.apiKey.isEmpty() ? QString() : QStringLiteral("  -H \"Authorization: Bearer %1\" \\\n").arg(t.apiKey);
    return QStringLiteral(
               "curl %1/chat/completions \\\n"
               "  -H \"Content-Type: application/json\" \\\n"
               "%2"
               "  -d '{\"model\": \"%3\", \"stream\": true,\n"
               "       \"messages\": [{\"role\": \"user\", \"content\": \"Hello!\"}]}'\n")
        .arg(t.baseUrl, auth, t.model);
}

QString python(const SnippetTarget& t) {
    return QStringLiteral(
               "# pip install openai\n"
               "from openai import OpenAI\n\n"
               "client = OpenAI(base_url=\"%1\", api_key=\"%2\")\n"
               "stream = client.chat.completions.create(\n"
               "    model=\"%3\",\n"
               "    messages=[{\"role\": \"user\", \"content\": \"Hello!\"}],\n"
               "    stream=True,\n"
               ")\n"
               "for chunk in stream:\n"
               "    print(chunk.choices[0].delta.content or \"\", end=\"\", flush=True)\n")
        .arg(t.baseUrl, keyOrPlaceholder(t), t.model);
}

QString javascript(const SnippetTarget& t) {
    return QStringLiteral(
               "// npm install openai\n"
               "import OpenAI from \"openai\";\n\n"
               "const client = new OpenAI({ baseURL: \"%1\", apiKey: \"%2\" });\n"
               "const stream = await client.chat.completions.create({\n"
               "  model: \"%3\",\n"
               "  messages: [{ role: \"user\", content: \"Hello!\" }],\n"
               "  stream: true,\n"
               "});\n"
               "for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? \"\");\n")
        .arg(t.baseUrl, keyOrPlaceholder(t), t.model);
}

QString continueConfig(const SnippetTarget& t) {
    return QStringLiteral(
               "# ~/.continue/config.yaml\n"
               "models:\n"
               "  - name: LoraDesk %3\n"
               "    provider: openai\n"
               "    model: %3\n"
               "    apiBase: %1\n"
               "    apiKey: %2\n"
               "    roles: [chat, edit, apply]\n")
        .arg(t.baseUrl, keyOrPlaceholder(t), t.model);
}

QString cline(const SnippetTarget& t) {
    return QStringLiteral(
               "Cline → Settings → API Provider: \"OpenAI Compatible\"\n"
               "  Base URL:  %1\n"
               "  API Key:   %2\n"
               "  Model ID:  %3\n")
        .arg(t.baseUrl, keyOrPlaceholder(t), t.model);
}

}  // namespace

QString snippet(SnippetKind kind, const SnippetTarget& target) {
    switch (kind) {
        case SnippetKind::Curl:
            return curl(target);
        case SnippetKind::Python:
            return python(target);
        case SnippetKind::JavaScript:
            return javascript(target);
        case SnippetKind::Continue:
            return continueConfig(target);
        case SnippetKind::Cline:
            return cline(target);
    }
    return {};
}

QString snippetTitle(SnippetKind kind) {
    switch (kind) {
        case SnippetKind::Curl:
            return QStringLiteral("curl");
        case SnippetKind::Python:
            return QStringLiteral("Python (openai)");
        case SnippetKind::JavaScript:
            return QStringLiteral("JavaScript (openai)");
        case SnippetKind::Continue:
            return QStringLiteral("Continue");
        case SnippetKind::Cline:
            return QStringLiteral("Cline");
    }
    return {};
}

QString baseUrlFor(const QString& host, int port) {
    QString h = host;
    if (h.isEmpty() || h == QLatin1String("0.0.0.0") || h == QLatin1String("::")) h = QStringLiteral("127.0.0.1");
    if (h.contains(QLatin1Char(':'))) h = QStringLiteral("[%1]").arg(h);  // IPv6 literal
    return QStringLiteral("http://%1:%2/v1").arg(h).arg(port);
}

}  // namespace loradesk::ui
