// The app's colours: the platform theme's palette ("system"), or Fusion with a light or a dark palette that
// the user picks in Settings. Qt 6.4 (Debian 12) has no QStyleHints::colorScheme(), so "system" keeps what
// the platform theme gives (GNOME and KDE pass their dark palettes through it) and restores it when chosen
// again. GUI thread only.
#pragma once

#include <QIcon>
#include <QString>

namespace loradesk::ui {

enum class ColorScheme { system, light, dark };

ColorScheme colorSchemeFromName(const QString& name);  // unknown names are "system"
QString colorSchemeName(ColorScheme scheme);
void applyColorScheme(ColorScheme scheme);
bool paletteIsDark();  // the window colour of the palette in use is darker than its text

// A navigation icon from the app's resources (":/loradesk/icons/<name>.svg"), with a QStyle fallback when the
// SVG icon engine is missing.
QIcon navigationIcon(const QString& name);

}  // namespace loradesk::ui
