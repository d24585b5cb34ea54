import LookoutAuth
import LookoutJSON
import LookoutStore

/// A data file: the collections to serve and the users who can log in.
///
/// ```json
/// {"collections": [{"name": "info_feed", "page_size": 10, "sort": ["id"], "documents": [...]}],
///  "users": [{"email": "demo@example.com", "role": "reader", "password_hash": "$scrypt$..."}]}
/// ```
///
/// Reading one needs no disk: ``init(json:)`` takes the parsed file, so the `lookout`
/// executable, the data commands and the fuzzers read it the same way.
public struct DataFile: Sendable {
    /// The declared collections, in file order.
    public let collections: [DocumentCollection]
    /// The users, in file order.
    public let users: [User]

    /// Reads a parsed data file.
    /// - Throws: ``DataFileError`` naming the first entry that cannot be used.
    public init(json: JSONValue) throws(DataFileError) {
        guard case .object(let root) = json else { throw DataFileError("the top level must be an object") }
        let collectionList = try Self.array(root["collections"] ?? [], "collections")
        var collections: [DocumentCollection] = []
        for (index, entry) in collectionList.enumerated() {
            guard case .object(let declaration) = entry, let name = declaration["name"]?.stringValue else {
                throw DataFileError("collections[\(index)] needs a string \"name\"")
            }
            let options = try Self.options(declaration, name)
            let documents = try Self.array(declaration["documents"] ?? [], "\(name).documents")
            do {
                collections.append(try DocumentCollection(name: name, options: options, documents: documents))
            } catch {
                throw DataFileError(String(describing: error))
            }
        }
        var users: [User] = []
        for (index, entry) in try Self.array(root["users"] ?? [], "users").enumerated() {
            guard let email = entry["email"]?.stringValue, let hash = entry["password_hash"]?.stringValue else {
                throw DataFileError("users[\(index)] needs string \"email\" and \"password_hash\"")
            }
            guard User.isValidEmail(email) else {
                throw DataFileError(
                    "users[\(index)].email must be 1 to \(User.maxEmailBytes) bytes without spaces or control characters"
                )
            }
            let roleName = entry["role"]?.stringValue ?? User.Role.reader.rawValue
            guard let role = User.Role(rawValue: roleName) else {
                throw DataFileError("users[\(index)].role must be one of reader, editor, admin")
            }
            do {
                users.append(User(email: email, role: role, passwordHash: try PasswordHash(hash)))
            } catch {
                throw DataFileError("users[\(index)].password_hash is not a $scrypt$ PHC string")
            }
        }
        self.collections = collections
        self.users = users
    }

    /// A collection's declared options: `sort`, `page_size`, `ignored`, `references`,
    /// `page_envelope` and `public`.
    private static func options(_ declaration: JSONObject, _ name: String) throws(DataFileError)
        -> DocumentCollection.Options
    {
        var options = DocumentCollection.Options()
        if let sort = declaration["sort"] {
            options.sort = try strings(sort, "\(name).sort").map(SortKey.init(parsing:))
        }
        if let ignored = declaration["ignored"] {
            options.ignored = Set(try strings(ignored, "\(name).ignored"))
        }
        if let references = declaration["references"] {
            guard let object = references.objectValue else {
                throw DataFileError("\(name).references must map field names to collection names")
            }
            for member in object {
                guard let target = member.value.stringValue else {
                    throw DataFileError("\(name).references.\(member.key) must be a collection name")
                }
                options.references[member.key] = target
            }
        }
        if let pageSize = declaration["page_size"] {
            guard let size = pageSize.intValue else { throw DataFileError("\(name).page_size must be an integer") }
            options.pageSize = size
        }
        if let envelope = declaration["page_envelope"] {
            guard let key = envelope.stringValue, !key.isEmpty, key != "page", key != "has_next_page" else {
                throw DataFileError("\(name).page_envelope must name the key that holds a page's items")
            }
            options.pageEnvelope = key
        }
        switch declaration["public"] {
        case nil, .bool(false)?: options.publicFields = .none
        case .bool(true)?: options.publicFields = .all
        case .array(let names)?: options.publicFields = .fields(try strings(.array(names), "\(name).public"))
        default: throw DataFileError("\(name).public must be true, false or a list of field names")
        }
        return options
    }

    /// A data file holding `collections` and `users`, as ``init(json:)`` reads it.
    public static func encode(
        collections: [(name: String, options: DocumentCollection.Options, documents: [JSONObject])], users: [User]
    )
        -> JSONValue
    {
        let defaults = DocumentCollection.Options()
        let declarations: [JSONValue] = collections.map { collection in
            let options = collection.options
            var object = JSONObject([("name", .string(collection.name))])
            if !options.sort.isEmpty { object["sort"] = .array(options.sort.map { .string($0.description) }) }
            if options.pageSize != defaults.pageSize { object["page_size"] = .int(options.pageSize) }
            if !options.ignored.isEmpty { object["ignored"] = .array(options.ignored.sorted().map(JSONValue.string)) }
            if !options.references.isEmpty {
                object["references"] = .object(
                    JSONObject(options.references.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }))
            }
            if let envelope = options.pageEnvelope { object["page_envelope"] = .string(envelope) }
            switch options.publicFields {
            case .none: break
            case .all: object["public"] = true
            case .only(let names): object["public"] = .array(names.map(JSONValue.string))
            }
            object["documents"] = .array(collection.documents.map(JSONValue.object))
            return .object(object)
        }
        let userList: [JSONValue] = users.map { user in
            [
                "email": .string(user.email), "role": .string(user.role.rawValue),
                "password_hash": .string(user.passwordHash.description),
            ]
        }
        return ["collections": .array(declarations), "users": .array(userList)]
    }

    private static func strings(_ value: JSONValue, _ name: String) throws(DataFileError) -> [String] {
        try array(value, name).map { item throws(DataFileError) in
            guard let text = item.stringValue, !text.isEmpty else {
                throw DataFileError("\(name) must list field names")
            }
            return text
        }
    }

    private static func array(_ value: JSONValue, _ name: String) throws(DataFileError) -> [JSONValue] {
        guard let array = value.arrayValue else { throw DataFileError("\(name) must be an array") }
        return array
    }
}
