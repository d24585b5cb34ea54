import LookoutJSON

/// A collection as declared in a data file: its name, options and initial documents,
/// each an object with a unique integer `id`. The ``Store`` is built from these.
public struct DocumentCollection: Sendable {
    /// How a collection is declared in a data file.
    public struct Options: Sendable, Equatable {
        /// The order of a list asked for without `sort` (then by id).
        public var sort: [SortKey]
        /// The largest page a list may be read in.
        public static let maxPageSize = 1000

        /// Page size for page-number and cursor paging, unless the request gives one.
        public var pageSize: Int
        /// Fields whose writes never wake anyone (Observation's `@ObservationIgnored`).
        public var ignored: Set<String>
        /// Fields holding the id of a document in another collection, by field name:
        /// `{"category_id": "category_feeds"}`. They can be expanded on read.
        public var references: [String: String]
        /// When set, a list is read a page at a time and answered as
        /// `{"page": N, "has_next_page": bool, "<pageEnvelope>": [...]}`, the seed app's
        /// information feed shape.
        public var pageEnvelope: String?
        /// The fields anyone may read without a token; none unless declared.
        public var publicFields: PublicFields

        public init(
            sort: [SortKey] = [],
            pageSize: Int = 10,
            ignored: Set<String> = [],
            references: [String: String] = [:],
            pageEnvelope: String? = nil,
            publicFields: PublicFields = .none
        ) {
            self.sort = sort
            self.pageSize = pageSize
            self.ignored = ignored
            self.references = references
            self.pageEnvelope = pageEnvelope
            self.publicFields = publicFields
        }
    }

    public let name: String
    public let options: Options
    /// Documents in insertion order.
    public private(set) var documents: [JSONObject]

    /// Creates a collection after checking its options and every document.
    /// - Throws: ``StoreError`` for a page size out of range, a declared `sort` on a
    ///   field that is not public in a partly public collection (anonymous readers would
    ///   be ordered by, and wait on, a field they may not read), or a document that is not
    ///   an object with a unique integer `id`.
    public init(name: String, options: Options = Options(), documents: [JSONValue]) throws(StoreError) {
        guard Self.isValidName(name) else { throw .invalidCollectionName(name) }
        guard (1...Options.maxPageSize).contains(options.pageSize) else {
            throw .invalidOptions(collection: name, reason: "page_size must be from 1 to \(Options.maxPageSize)")
        }
        if case .only = options.publicFields,
            let key = options.sort.first(where: { !options.publicFields.contains($0.path.field) })
        {
            throw .invalidOptions(
                collection: name,
                reason: "sort key \"\(key)\" is not a public field; a partly public collection sorts by public fields")
        }
        var seen = Set<Int>()
        var objects: [JSONObject] = []
        objects.reserveCapacity(documents.count)
        for (index, document) in documents.enumerated() {
            guard case .object(let object) = document else {
                throw .invalidDocument(collection: name, index: index, reason: "is not an object")
            }
            guard let id = object["id"]?.intValue else {
                throw .invalidDocument(collection: name, index: index, reason: "has no integer \"id\"")
            }
            guard Self.ids.contains(id) else {
                throw .invalidDocument(
                    collection: name, index: index,
                    reason: "has id \(id), outside \(Self.ids.lowerBound)...\(Self.ids.upperBound)")
            }
            guard seen.insert(id).inserted else {
                throw .invalidDocument(collection: name, index: index, reason: "repeats id \(id)")
            }
            objects.append(object)
        }
        self.name = name
        self.options = options
        self.documents = objects
    }

    /// The collection as first stored: every document created at `revision`.
    func image(at revision: UInt64) -> CollectionImage {
        CollectionImage(
            name: name, membershipRevision: revision,
            documents: documents.map {
                DocumentImage(fields: $0, revisions: [:], created: revision, fieldNamesRevision: revision)
            })
    }

    /// The ids a document may be given: 1 to 2^53 − 1, every integer that a client reading
    /// JSON numbers as doubles (JavaScript's `Number.MAX_SAFE_INTEGER`) gets back exactly.
    /// A created document without an id gets the highest id in this range plus one, so
    /// that arithmetic never leaves `Int` either.
    public static let ids: ClosedRange<Int> = 1...9_007_199_254_740_991

    /// Names the service's own routes use under `/v1/`.
    public static let reservedNames: Set<String> = ["auth", "watch"]

    /// Collection names appear in URLs: lowercase letters, digits and `_`, starting with a
    /// letter, and not one of ``reservedNames``.
    public static func isValidName(_ name: String) -> Bool {
        guard !reservedNames.contains(name), let first = name.utf8.first,
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first),
            name.utf8.count <= 64
        else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }
}
