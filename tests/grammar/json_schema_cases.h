// Data rows of tst_json_schema_grammar, kept out of the moc-scanned file (moc misreads some of the raw strings):
// schemas with documents that must match and must not, and schemas whose error must name a keyword.
#pragma once

namespace loradesk::grammar::test {

// Columns: schema (QString), good (QStringList), bad (QStringList), strict (bool).
void add_document_rows();
void add_number_rows();
// Columns: schema (QString), message (QString).
void add_unsupported_rows();

}  // namespace loradesk::grammar::test
