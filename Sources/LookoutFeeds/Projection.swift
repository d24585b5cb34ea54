import LookoutJSON
import LookoutStore

/// What a read returns of each document: `fields=a,b` (and `id`) or everything, with
/// the references named in `expand=` resolved alongside.
public struct Projection: Sendable, Equatable {
    /// The fields to read and return; nil for all. Expanded references come along.
    public let fields: [String]?
    /// Reference fields to resolve, each declared in the collection's `references`.
    public let expand: [String]

    init(fields: [String]?, expand: [String]) {
        self.fields = fields
        self.expand = expand
    }

    /// Reads `fields` and `expand` from a query's parameters.
    /// - Throws: ``QueryError`` for an `expand` that is not a declared reference.
    public init(
        fields: String?,
        expand: String?,
        collection: String,
        options: DocumentCollection.Options
    ) throws(QueryError) {
        var references: [String] = []
        for part in (expand ?? "").split(separator: ",") {
            let field = String(part)
            guard options.references[field] != nil else {
                let declared = options.references.keys.sorted().joined(separator: ", ")
                throw QueryError(
                    "expand", "'\(field.prefix(64))' is not a reference of \(collection) (declared: \(declared)).")
            }
            references.append(field)
        }
        guard let fields else {
            self.init(fields: nil, expand: references)
            return
        }
        let named = fields.split(separator: ",").map(String.init)
        self.init(fields: named + references.filter { !named.contains($0) }, expand: references)
    }

    /// Document `id` as projected, with its references expanded; records every read.
    public func read(_ id: Int, in collection: String, from snapshot: StoreSnapshot, reads: inout ReadSet)
        -> JSONObject?
    {
        guard let document = snapshot.document(id, in: collection, fields: fields, reads: &reads) else { return nil }
        return expand.isEmpty ? document : snapshot.expanding(document, of: collection, expand, reads: &reads)
    }
}
