// AdapterFilterModel: the Adapters view's filter bar over AdapterTableModel — name (substring, also
// matches aliases' display), base model, tier and pinned-only — and numeric-aware sorting through
// AdapterTableModel::SortRole. GUI thread only.
#pragma once

#include <QSortFilterProxyModel>

namespace loradesk::ui {

class AdapterFilterModel : public QSortFilterProxyModel {
    Q_OBJECT
  public:
    explicit AdapterFilterModel(QObject* parent = nullptr);

    void setNameFilter(const QString& text);
    void setBaseModelFilter(const QString& baseModel);  // empty = any
    void setTierFilter(const QString& tier);            // gpu | cpu | disk; empty = any
    void setPinnedOnly(bool pinnedOnly);

    QString nameFilter() const { return m_name; }

  protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

  private:
    QString m_name;
    QString m_baseModel;
    QString m_tier;
    bool m_pinnedOnly = false;
};

}  // namespace loradesk::ui
