// A small RFC 4180 reader for the host import (csvImport.ts): no dependency for ~60 lines.
// Fields are separated by commas, records by CRLF or LF; a field in double quotes may hold commas,
// line breaks and "" (one quote). A UTF-8 byte order mark (spreadsheets write one) is skipped.
// Cells are text only: `=1+2` stays `=1+2` (an import stores, it never evaluates).

export interface CsvRecord {
  /** The record's row as a spreadsheet numbers it: the header is row 1. */
  row: number;
  cells: string[];
}

export class CsvSyntaxError extends Error {
  constructor(readonly row: number, reason: string) {
    super(`row ${row}: ${reason}`);
  }
}

/**
 * The records of `text`, the header first. Blank lines (a trailing newline, an empty line between
 * records) are skipped. Stops with CsvSyntaxError at a quote that is not closed or a quote in the
 * middle of an unquoted field, and once more than `maxRecords` records were read.
 */
export function parseCsv(text: string, maxRecords = Infinity): CsvRecord[] {
  const records: CsvRecord[] = [];
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let row = 0;
  const n = text.length;
  while (i < n) {
    row++;
    const cells: string[] = [];
    let quoted = false;
    // One record: fields until an unquoted line break or the end.
    for (;;) {
      let cell = '';
      if (text[i] === '"') {
        quoted = true;
        i++;
        for (;;) {
          const q = text.indexOf('"', i);
          if (q < 0) throw new CsvSyntaxError(row, 'a quoted field is not closed (a " is missing)');
          cell += text.slice(i, q);
          if (text[q + 1] === '"') { cell += '"'; i = q + 2; continue; }
          i = q + 1;
          break;
        }
        if (i < n && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') throw new CsvSyntaxError(row, 'text after a closing quote (write "" for a quote inside a quoted field)');
      } else {
        let j = i;
        while (j < n && text[j] !== ',' && text[j] !== '\n' && text[j] !== '\r') j++;
        cell = text.slice(i, j);
        if (cell.includes('"')) throw new CsvSyntaxError(row, 'a quote inside an unquoted field (quote the whole field and write "" for the quote)');
        i = j;
      }
      cells.push(cell);
      if (text[i] === ',') { i++; continue; }
      break;
    }
    if (text[i] === '\r') i++;
    if (text[i] === '\n') i++;
    // A line with nothing on it is no record (but `""` is a record of one empty field).
    if (cells.length === 1 && cells[0] === '' && !quoted) continue;
    if (records.length >= maxRecords) throw new CsvSyntaxError(row, `more than ${maxRecords - 1} rows after the header`);
    records.push({ row, cells });
  }
  return records;
}
