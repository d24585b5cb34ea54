import LookoutJSON
import LookoutStore

/// A list query's answer: the documents of its window and what the paging headers need.
public struct ListResult: Sendable {
    public enum Window: Sendable, Equatable {
        case all
        /// `lastPage`: the last page that holds documents, or 1.
        case page(PageWindow, lastPage: Int)
        /// `next`: where the next page starts, when documents follow this one.
        case cursor(next: ListCursor?, limit: Int)
    }

    public let documents: [JSONObject]
    /// How many documents match, over all pages.
    public let total: Int
    public let window: Window
}

extension ListQuery {
    /// Runs the query on `snapshot`, recording exactly what the answer depends on: the
    /// membership; each document's filtered fields (only as far as needed to decide it);
    /// the sort fields of the documents that match; and the returned fields of the
    /// documents in the window. A write anywhere else wakes nobody waiting on it.
    public func evaluate(in snapshot: StoreSnapshot, reads: inout ReadSet) -> ListResult {
        // Looked up once: the filters and sort keys read every document of it.
        let source = snapshot.collection(collection)
        let ids = source?.ids(reads: &reads) ?? []
        let matching = source.map { source in ids.filter { matches($0, in: source, reads: &reads) } } ?? []
        let rows = source?.rows(matching, by: sort, reads: &reads) ?? []
        // In list order: by the sort keys, then by id (the whole order without keys).
        let precedes = { (a: Row, b: Row) in SortKey.compare(a, b, by: sort) == .orderedAscending }
        // Only what the window needs is put in order: a page or a cursor page is the first
        // few rows of thousands that match.
        let selected: ArraySlice<Row>
        let window: ListResult.Window
        switch paging {
        case .all:
            selected = rows.sorted(by: precedes)[...]
            window = .all
        case .page(let number, let size):
            let page = PageWindow(number: number, size: size, total: rows.count)
            selected = page.range.isEmpty ? [] : rows.smallest(page.range.upperBound, by: precedes)[page.range]
            window = .page(page, lastPage: max(1, (rows.count + size - 1) / size))
        case .cursor(let after, let limit):
            let following = after.map { cursor in rows.filter { sortsAfter($0, cursor) } } ?? rows
            let first = following.smallest(limit, by: precedes)
            selected = first[...]
            let next = following.count > limit ? first.last : nil
            window = .cursor(next: next.map { ListCursor(sort: sort, values: $0.values, id: $0.id) }, limit: limit)
        }
        let documents = selected.compactMap { row in
            projection.read(row.id, in: collection, from: snapshot, reads: &reads)
        }
        return ListResult(documents: documents, total: rows.count, window: window)
    }

    /// A document's sort values and id.
    private typealias Row = (values: [JSONValue?], id: Int)

    /// Whether document `id` passes every filter and the search; stops reading at the
    /// first filter it fails, since the answer does not depend on the rest.
    private func matches(_ id: Int, in source: CollectionSnapshot, reads: inout ReadSet) -> Bool {
        for filter in filters where !filter.matches(source.value(at: filter.path, of: id, reads: &reads)) {
            return false
        }
        guard let search else { return true }
        // Searching only the fields it may see, it never reads (or waits on) the others.
        let names = searchFields ?? source.fieldNames(of: id, reads: &reads)
        for name in names where name != "id" {
            if Self.contains(search, source.value(at: FieldPath(field: name), of: id, reads: &reads)) {
                return true
            }
        }
        return false
    }

    /// Whether any string in `value`, at any depth, contains `text` (lowercased UTF-8)
    /// ignoring case, by Unicode scalars as `_like` compares.
    private static func contains(_ text: [UInt8], _ value: JSONValue?) -> Bool {
        switch value {
        case .string(let string)?: LikePattern.contains(text, in: string)
        case .array(let items)?: items.contains { contains(text, $0) }
        case .object(let object)?: object.contains { contains(text, $0.value) }
        default: false
        }
    }

    /// Whether `row` sorts after the document `cursor` names.
    private func sortsAfter(_ row: Row, _ cursor: ListCursor) -> Bool {
        SortKey.compare(row, (cursor.values, cursor.id), by: sort) == .orderedDescending
    }
}
