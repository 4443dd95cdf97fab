// Fusion palettes and the navigation icons.
#include "ui/theme.h"

#include <QApplication>
#include <QPainter>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>
#include <memory>

// icons.qrc lives in the static loradesk_ui library, whose resource object the linker would drop as unreferenced:
// Q_INIT_RESOURCE (outside any namespace, as Qt requires) references it.
static void initIconResources() { Q_INIT_RESOURCE(icons); }

namespace loradesk::ui {

namespace {

// What the platform gave before any change, so that "system" can be chosen again.
struct SystemLook {
    QString style;
    QPalette palette;
};

const SystemLook& systemLook() {
    static const SystemLook look{QApplication::style()->name(), QApplication::palette()};
    return look;
}

QPalette lightPalette() {
    const std::unique_ptr<QStyle> fusion(QStyleFactory::create(QStringLiteral("Fusion")));
    QPalette p = fusion->standardPalette();
    p.setColor(QPalette::Highlight, QColor(0x2f, 0x6f, 0xde));
    p.setColor(QPalette::Link, QColor(0x2f, 0x6f, 0xde));
    return p;
}

QPalette darkPalette() {
    const QColor window(0x2b, 0x2d, 0x31), base(0x1f, 0x21, 0x24), text(0xe8, 0xea, 0xed), dim(0x8a, 0x8f, 0x98);
    const QColor button(0x35, 0x37, 0x3c), accent(0x4c, 0x8b, 0xf5);
    QPalette p;
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, dim);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, button);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::white);
    p.setColor(QPalette::Highlight, accent);
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, accent);
    p.setColor(QPalette::Light, button.lighter(130));
    p.setColor(QPalette::Midlight, button.lighter(115));
    p.setColor(QPalette::Mid, window.darker(120));
    p.setColor(QPalette::Dark, base.darker(130));
    p.setColor(QPalette::Shadow, Qt::black);
    for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, dim);
    p.setColor(QPalette::Disabled, QPalette::Highlight, button);
    return p;
}

}  // namespace

ColorScheme colorSchemeFromName(const QString& name) {
    if (name == QLatin1String("light")) return ColorScheme::light;
    if (name == QLatin1String("dark")) return ColorScheme::dark;
    return ColorScheme::system;
}

QString colorSchemeName(ColorScheme scheme) {
    switch (scheme) {
        case ColorScheme::light:
            return QStringLiteral("light");
        case ColorScheme::dark:
            return QStringLiteral("dark");
        default:
            return QStringLiteral("system");
    }
}

void applyColorScheme(ColorScheme scheme) {
    const SystemLook& system = systemLook();
    // A palette set by the app stops following the platform theme's changes, so "system" sets nothing until
    // Light or Dark has replaced it.
    static bool replaced = false;
    if (scheme == ColorScheme::system) {
        if (!replaced) return;
        replaced = false;
        if (QApplication::style()->name() != system.style) QApplication::setStyle(system.style);
        QApplication::setPalette(system.palette);
        return;
    }
    replaced = true;
    // Fusion draws with the palette it is given; platform styles (GTK, Breeze) may not.
    if (QApplication::style()->name() != QLatin1String("fusion")) QApplication::setStyle(QStringLiteral("Fusion"));
    QApplication::setPalette(scheme == ColorScheme::dark ? darkPalette() : lightPalette());
}

bool paletteIsDark() {
    const QPalette p = QApplication::palette();
    return p.color(QPalette::Window).lightness() < p.color(QPalette::WindowText).lightness();
}

QIcon navigationIcon(const QString& name) {
    static const bool registered = (initIconResources(), true);
    Q_UNUSED(registered);
    const QIcon svg(QStringLiteral(":/loradesk/icons/%1.svg").arg(name));
    if (svg.pixmap(16, 16).isNull()) return QApplication::style()->standardIcon(QStyle::SP_FileDialogListView);
    // The grey strokes read on light and dark windows; on the selection's colour they turn white.
    QIcon icon;
    for (int size : {16, 20, 24, 40, 48}) {
        const QPixmap normal = svg.pixmap(size, size);
        QPixmap white = normal;
        QPainter paint(&white);
        paint.setCompositionMode(QPainter::CompositionMode_SourceIn);
        paint.fillRect(white.rect(), Qt::white);
        paint.end();
        icon.addPixmap(normal, QIcon::Normal);
        icon.addPixmap(white, QIcon::Selected);
    }
    return icon;
}

}  // namespace loradesk::ui
