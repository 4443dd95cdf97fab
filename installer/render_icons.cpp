// Build-time tool: renders the scalable app icon into the hicolor PNG sizes that desktops without SVG
// support (and some software centres) look for. Usage: loradesk_render_icons ICON.svg OUT_DIR NAME.
#include <QDir>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QSvgRenderer>
#include <cstdio>

int main(int argc, char** argv) {
    QGuiApplication app(argc, argv);
    if (argc != 4) {
        std::fprintf(stderr, "usage: loradesk_render_icons ICON.svg OUT_DIR NAME\n");
        return 2;
    }
    QSvgRenderer svg(QString::fromLocal8Bit(argv[1]));
    if (!svg.isValid()) {
        std::fprintf(stderr, "loradesk_render_icons: %s is not a valid SVG\n", argv[1]);
        return 1;
    }
    for (int size : {16, 32, 48, 64, 128, 256}) {
        const QString dir = QStringLiteral("%1/%2x%2/apps").arg(QString::fromLocal8Bit(argv[2])).arg(size);
        QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
        image.fill(Qt::transparent);
        QPainter painter(&image);
        painter.setRenderHint(QPainter::Antialiasing);
        svg.render(&painter);
        painter.end();
        const QString path = dir + QLatin1Char('/') + QString::fromLocal8Bit(argv[3]) + QStringLiteral(".png");
        if (!QDir().mkpath(dir) || !image.save(path)) {
            std::fprintf(stderr, "loradesk_render_icons: cannot write %s\n", qPrintable(path));
            return 1;
        }
    }
    return 0;
}
