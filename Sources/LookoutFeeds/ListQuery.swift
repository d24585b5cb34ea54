import LookoutStore

/// A json-server style read of a collection: filters, full-text search, sort, paging and
/// projection, parsed from a request's query parameters and checked against the store.
///
/// The parameter names are in ``reserved``; any other parameter is a filter on the field
/// it names (README, "Any collection").
public struct ListQuery: Sendable {
    public enum Paging: Sendable, Equatable {
        /// Every matching document.
        case all
        /// Page-number paging, from 1.
        case page(number: Int, size: Int)
        /// Up to `limit` documents after `after` (from the start when nil).
        case cursor(after: ListCursor?, limit: Int)
    }

    /// The largest `per_page` or `limit`.
    public static let maxPageSize = DocumentCollection.Options.maxPageSize
    /// Parameters that are not filters.
    public static let reserved: Set<String> = [
        "q", "sort", "order", "page", "per_page", "after", "limit", "fields", "expand", "wait", "since",
    ]
    /// Parameters a `Link` target leaves out: it adds its own paging, and following a
    /// link is a new read, not a long-poll.
    public static let linkOmitted: Set<String> = ["page", "per_page", "after", "limit", "wait", "since"]

    public let collection: String
    /// All must hold.
    public let filters: [Filter]
    /// `q`, lowercased, as UTF-8.
    public let search: [UInt8]?
    /// The fields `q` searches: nil for every field but `id`.
    public let searchFields: [String]?
    /// The order: `sort`/`order`, or else the collection's declared sort; then by id.
    public let sort: [SortKey]
    public let paging: Paging
    public let projection: Projection
    /// The key of the page envelope's items, for a collection declared with one.
    public let envelope: String?

    /// Parses `parameters` (decoded, in order) for a list of `collection` in `snapshot`,
    /// read in `scope`: in ``ReadScope/publicFields`` every field it names must be public.
    /// - Returns: nil when there is no such collection.
    /// - Throws: ``QueryError`` naming the first parameter that cannot be used.
    public init?(
        collection: String,
        parameters: [(name: String, value: String)],
        in snapshot: StoreSnapshot,
        scope: ReadScope = .everything
    ) throws(QueryError) {
        guard let options = snapshot.options(of: collection) else { return nil }
        let searchFields = try scope.defaultFields(of: collection, options)
        let visible = scope.visible(options)
        var firsts: [String: String] = [:]
        var filters: [Filter] = []
        var filterIndex: [String: Int] = [:]
        for (name, value) in parameters {
            if Self.reserved.contains(name) {
                if firsts[name] == nil { firsts[name] = value }
                continue
            }
            if let index = filterIndex[name] {
                filters[index].add(value)
                continue
            }
            let (path, op) = try Self.filterTarget(name, collection, snapshot, visible)
            filterIndex[name] = filters.count
            filters.append(Filter(path: path, op: op, value: value))
        }
        self.collection = collection
        self.filters = filters
        self.search = firsts["q"].map { Array($0.lowercased().utf8) }
        self.searchFields = searchFields
        self.sort = try Self.sortKeys(firsts["sort"], firsts["order"], options, collection, snapshot, visible)
        self.envelope = options.pageEnvelope
        self.paging = try Self.paging(firsts, options: options, sort: sort)
        self.projection = try Projection(
            fields: firsts["fields"], expand: firsts["expand"], collection: collection, options: options,
            scope: scope, in: snapshot)
    }

    /// The field path and operator a filter parameter names.
    ///
    /// A top-level name that is a field is that field, even if it ends like an operator
    /// (`min_budget`). In a dotted name only the top-level field is known to exist, so a
    /// known operator suffix (`address.city_ne`) is an operator and anything else is part
    /// of the path.
    ///
    /// Only `visible` fields are known: a name that reaches no visible field needs a
    /// token unless the field it would name is public (then it is simply not a field).
    private static func filterTarget(
        _ name: String,
        _ collection: String,
        _ snapshot: StoreSnapshot,
        _ visible: PublicFields
    ) throws(QueryError) -> (FieldPath, Filter.Operator) {
        let known = { (field: String) in visible.contains(field) && snapshot.hasField(field, in: collection) }
        let path = FieldPath(name)
        let split = name.lastIndex(of: "_").map {
            (base: String(name[..<$0]), suffix: String(name[name.index(after: $0)...]))
        }
        let op = split.flatMap { $0.suffix.contains(".") ? nil : Filter.Operator(rawValue: $0.suffix) }.flatMap {
            $0 == .equal ? nil : $0
        }
        if !path.rest.isEmpty, known(path.field) {
            if let split, let op { return (FieldPath(split.base), op) }
            return (path, .equal)
        }
        if path.rest.isEmpty, known(path.field) { return (path, .equal) }
        guard let split, !split.suffix.contains("."), path.rest.isEmpty, known(split.base) else {
            // The field the name would filter on, had the collection one by that name.
            let field = path.rest.isEmpty && op != nil ? split?.base ?? path.field : path.field
            if !visible.contains(field) { throw .tokenRequired(name, field: field, of: collection) }
            throw QueryError(name, "\(collection) has no field '\(path.field.prefix(64))' to filter on.")
        }
        guard let op else {
            throw QueryError(
                name, "'_\(split.suffix.prefix(32))' is not an operator; use _ne, _gt, _gte, _lt, _lte or _like.")
        }
        return (FieldPath(field: split.base), op)
    }

    /// `sort=a,-b` with `order=asc,desc`, or the declared sort (which is public wherever
    /// anything is: ``DocumentCollection`` checks it).
    private static func sortKeys(
        _ sort: String?,
        _ order: String?,
        _ options: DocumentCollection.Options,
        _ collection: String,
        _ snapshot: StoreSnapshot,
        _ visible: PublicFields
    ) throws(QueryError) -> [SortKey] {
        guard let sort else {
            if order != nil { throw QueryError("order", "needs sort: it gives the direction of each sort key.") }
            return options.sort
        }
        let keys = sort.split(separator: ",", omittingEmptySubsequences: false).map { SortKey(parsing: String($0)) }
        for key in keys {
            if !key.path.field.isEmpty, !visible.contains(key.path.field) {
                throw .tokenRequired("sort", field: key.path.field, of: collection)
            }
            if key.path.field.isEmpty || !snapshot.hasField(key.path.field, in: collection) {
                throw QueryError("sort", "\(collection) has no field '\(key.path.description.prefix(64))' to sort by.")
            }
        }
        guard let order else { return keys }
        let directions = order.split(separator: ",", omittingEmptySubsequences: false)
        guard directions.count <= keys.count else {
            throw QueryError("order", "gives \(directions.count) directions for \(keys.count) sort keys.")
        }
        if keys.contains(where: \.descending) {
            throw QueryError("order", "cannot be combined with '-' in sort; use one or the other.")
        }
        var result = keys
        for (index, direction) in directions.enumerated() {
            switch direction {
            case "asc": break
            case "desc": result[index] = SortKey(keys[index].path, descending: true)
            default: throw QueryError("order", "must list asc or desc, not '\(direction.prefix(16))'.")
            }
        }
        return result
    }

    private static func paging(
        _ parameters: [String: String],
        options: DocumentCollection.Options,
        sort: [SortKey]
    ) throws(QueryError) -> Paging {
        let page = try parameters["page"].map { text throws(QueryError) in try integer("page", text, in: 1...Int.max) }
        let perPage = try parameters["per_page"].map { text throws(QueryError) in
            try integer("per_page", text, in: 1...maxPageSize)
        }
        let limit = try parameters["limit"].map { text throws(QueryError) in
            try integer("limit", text, in: 1...maxPageSize)
        }
        let after = parameters["after"]
        if options.pageEnvelope != nil {
            if after != nil || limit != nil {
                throw QueryError(after != nil ? "after" : "limit", "this collection is read by page number.")
            }
            guard let page else { throw QueryError("page", "required; pages start at 1.") }
            return .page(number: page, size: perPage ?? options.pageSize)
        }
        if page != nil || perPage != nil {
            if after != nil || limit != nil {
                throw QueryError(after != nil ? "after" : "limit", "cannot be combined with page or per_page.")
            }
            return .page(number: page ?? 1, size: perPage ?? options.pageSize)
        }
        if after != nil || limit != nil {
            let cursor = try after.map { text throws(QueryError) in try ListCursor(decoding: text, for: sort) }
            return .cursor(after: cursor, limit: limit ?? options.pageSize)
        }
        return .all
    }

    private static func integer(_ name: String, _ text: String, in range: ClosedRange<Int>) throws(QueryError) -> Int {
        guard let value = Int(text), range.contains(value) else {
            let bounds =
                range.upperBound == Int.max
                ? "at least \(range.lowerBound)" : "from \(range.lowerBound) to \(range.upperBound)"
            throw QueryError(name, "must be an integer \(bounds), not '\(text.prefix(32))'.")
        }
        return value
    }
}
