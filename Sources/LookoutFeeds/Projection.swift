import LookoutJSON
import LookoutStore

/// What a read returns of each document: `fields=a,b` (and `id`) or everything its
/// ``ReadScope`` may see, with the references named in `expand=` resolved alongside.
public struct Projection: Sendable, Equatable {
    /// The fields to read and return; nil for all. Expanded references come along.
    public let fields: [String]?
    /// Reference fields to resolve, each declared in the collection's `references`.
    public let expand: [String]
    /// Per referenced collection that is read in part, the fields read of its documents.
    let expandedFields: [String: [String]]

    init(fields: [String]?, expand: [String], expandedFields: [String: [String]] = [:]) {
        self.fields = fields
        self.expand = expand
        self.expandedFields = expandedFields
    }

    /// Reads `fields` and `expand` from a query's parameters, for a read in `scope` of
    /// `collection` (declared with `options`) in `snapshot`.
    ///
    /// In ``ReadScope/publicFields`` scope, no `fields` means the public ones, and an
    /// expanded document shows its own collection's public fields.
    /// - Throws: ``QueryError`` for an `expand` that is not a declared reference; one that
    ///   needs a token for a field that is not public, or a collection with none.
    public init(
        fields: String?,
        expand: String?,
        collection: String,
        options: DocumentCollection.Options,
        scope: ReadScope = .everything,
        in snapshot: StoreSnapshot
    ) throws(QueryError) {
        let visible = scope.visible(options)
        let defaultFields = try scope.defaultFields(of: collection, options)
        var references: [String] = []
        var expandedFields: [String: [String]] = [:]
        for field in Self.names(expand) {
            guard visible.contains(field) else { throw .tokenRequired("expand", field: field, of: collection) }
            guard let target = options.references[field] else {
                let declared = options.references.keys.sorted().filter(visible.contains).joined(separator: ", ")
                throw QueryError(
                    "expand", "'\(field.prefix(64))' is not a reference of \(collection) (declared: \(declared)).")
            }
            let targetOptions = snapshot.options(of: target) ?? DocumentCollection.Options()
            do {
                if let names = try scope.defaultFields(of: target, targetOptions) { expandedFields[target] = names }
            } catch {
                throw QueryError(
                    needingToken: "expand",
                    "\(target), which \(field) refers to, has no public fields; send a token (Authorization: Bearer) to expand it."
                )
            }
            references.append(field)
        }
        guard let fields else {
            self.init(
                fields: defaultFields.map { names in names + references.filter { !names.contains($0) } },
                expand: references, expandedFields: expandedFields)
            return
        }
        let named = fields.split(separator: ",").map(String.init)
        for name in named where !visible.contains(name) {
            throw .tokenRequired("fields", field: name, of: collection)
        }
        self.init(
            fields: named + references.filter { !named.contains($0) }, expand: references,
            expandedFields: expandedFields)
    }

    /// The collections `expand` reaches from a collection declared with `options`: the
    /// target of each name that is a declared reference, in order. A read that expands
    /// them reads those collections too, so what it may see depends on them as well.
    public static func expandedCollections(_ expand: String?, of options: DocumentCollection.Options) -> [String] {
        names(expand).compactMap { options.references[$0] }
    }

    private static func names(_ expand: String?) -> [String] {
        (expand ?? "").split(separator: ",").map(String.init)
    }

    /// Document `id` as projected, with its references expanded; records every read.
    public func read(_ id: Int, in collection: String, from snapshot: StoreSnapshot, reads: inout ReadSet)
        -> JSONObject?
    {
        guard let document = snapshot.document(id, in: collection, fields: fields, reads: &reads) else { return nil }
        return expand.isEmpty
            ? document : snapshot.expanding(document, of: collection, expand, fields: expandedFields, reads: &reads)
    }
}
