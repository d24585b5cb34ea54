import LookoutJSON

/// What a read should answer, by README "Who may read what" alone, to compare the server
/// against: for each collection a read touches (the one in its path, each one `expand`
/// reaches, each one a watch reads) what that collection allows the reader.
///
/// The list parameters themselves (filters, `q`, `sort`, paging, `fields`) are
/// ``ReferenceQuery``'s, run on the collection as the reader sees it: without a token, as
/// if it had only its public fields.
struct ReferenceAccess {
    /// Who sends a request.
    enum Reader: Equatable {
        case anonymous
        case holder
        /// A token that does not verify, and the error code it is refused with.
        case refused(code: String)
    }

    /// Who the answer is for: everyone alike, or it depends on the token.
    enum Viewer: Equatable {
        /// Every collection touched is `"public": true`: the same for all, no `Vary`.
        case everyone
        /// Each collection's public fields; `Vary: Authorization`.
        case publicFields
        /// Every field; `Vary: Authorization` and `Cache-Control: private`.
        case holder
    }

    enum Answer {
        /// 200 with this body, for this viewer.
        case ok(Body, Viewer)
        /// Refused: with 401 `token_required` when `tokenRequired`, with 400
        /// `invalid_parameter` naming any of `invalid`; either is right when both are given
        /// (the README does not order two problems of one request).
        case refused(tokenRequired: Bool, invalid: [String])
        /// 401 with the token's own error.
        case tokenError(code: String)
        case notFound
    }

    enum Body {
        case list(ReferenceQuery.List)
        case document(JSONObject)
        /// A watch's `values`.
        case values(JSONObject)
    }

    var world: AccessWorld

    /// The answer to `GET target` sent by `reader`.
    func answer(_ target: String, by reader: Reader) -> Answer {
        let (path, parameters) = ReferenceQuery.split(target)
        let parts = path.split(separator: "/").map(String.init)
        if parts[1] == "watch" { return watch(parameters, by: reader) }
        guard let collection = world.collection(parts[1]) else { return .notFound }
        let id = parts.count > 2 ? Int(parts[2]) : nil
        var first: [String: String] = [:]
        for parameter in parameters where first[parameter.name] == nil { first[parameter.name] = parameter.value }
        let expand = (first["expand"] ?? "").split(separator: ",").map(String.init)

        // Who the answer is for.
        let touched = [collection] + expand.compactMap { collection.target(of: $0) }.compactMap(world.collection)
        let viewer: Viewer
        if touched.allSatisfy({ $0.visibility == .all }) {
            viewer = .everyone
        } else {
            switch reader {
            case .anonymous: viewer = .publicFields
            case .holder: viewer = .holder
            case .refused(let code):
                guard collection.visibility == .all else { return .tokenError(code: code) }
                viewer = .publicFields
            }
        }
        let view = Self.view(of: collection, for: viewer)
        if viewer == .publicFields, !collection.hasPublicFields { return .refused(tokenRequired: true, invalid: []) }

        // Parameters that name what the viewer may not see need a token.
        var needsToken: Set<String> = []
        var invalid: [String] = []
        let sees = { (field: String) in Self.sees(field, of: collection, viewer) }
        if id == nil {
            for parameter in parameters where !ReferenceQuery.reservedNames.contains(parameter.name) {
                if !sees(Self.filteredField(parameter.name, known: { sees($0) && Self.isKnown($0, in: view) })) {
                    needsToken.insert(parameter.name)
                }
            }
            for key in (first["sort"] ?? "").split(separator: ",") {
                let field = String(key.drop { $0 == "-" }.prefix { $0 != "." })
                if !sees(field) {
                    needsToken.insert("sort")
                } else if !Self.isKnown(field, in: view) {
                    invalid.append("sort")
                }
            }
        }
        for field in (first["fields"] ?? "").split(separator: ",").map(String.init) where !sees(field) {
            needsToken.insert("fields")
        }
        for name in expand {
            if !sees(name) {
                needsToken.insert("expand")
            } else if let target = collection.target(of: name) {
                // Expanding into a collection with nothing public (or none at all).
                if viewer == .publicFields, world.collection(target)?.hasPublicFields != true {
                    needsToken.insert("expand")
                }
            } else {
                invalid.append("expand")
            }
        }

        if id == nil {
            // The rest is a list query on the collection as the viewer sees it.
            let kept = parameters.filter { !needsToken.contains($0.name) }
            let rest = path + "?" + kept.map(\.raw).joined(separator: "&")
            let reference = ReferenceQuery(collection: view)
            switch reference.answer(target: rest) {
            case .invalid(let parameter): invalid.append(parameter)
            case .list: break
            }
            if !needsToken.isEmpty || !invalid.isEmpty {
                return .refused(tokenRequired: !needsToken.isEmpty, invalid: invalid)
            }
            guard case .list(var list) = reference.answer(target: target) else {
                return .refused(tokenRequired: false, invalid: invalid)
            }
            list.documents = list.documents.map { shown in
                let source = view.documents.first { $0["id"] == shown["id"] } ?? [:]
                return .object(expanding(shown.objectValue ?? [:], from: source, collection, expand, viewer))
            }
            return .ok(.list(list), viewer)
        }

        if !needsToken.isEmpty || !invalid.isEmpty {
            return .refused(tokenRequired: !needsToken.isEmpty, invalid: invalid)
        }
        guard let id, let source = view.documents.first(where: { $0["id"] == .int(id) }) else { return .notFound }
        var shown = source
        if let fields = first["fields"] {
            let named = Set(fields.split(separator: ",").map(String.init))
            shown = JSONObject(
                source.members.filter { $0.key == "id" || named.contains($0.key) }.map { ($0.key, $0.value) })
        }
        return .ok(.document(expanding(shown, from: source, collection, expand, viewer)), viewer)
    }

    /// `shown` with each reference in `expand` (and the reference field itself) added from
    /// `source`: `x_id` adds `x`, the referenced document as the viewer sees it, or null.
    func expanding(
        _ shown: JSONObject,
        from source: JSONObject,
        _ collection: AccessWorld.Collection,
        _ expand: [String],
        _ viewer: Viewer
    ) -> JSONObject {
        var result = shown
        for name in expand {
            if let value = source[name] { result[name] = value }
        }
        for name in expand {
            let key = name.hasSuffix("_id") ? String(name.dropLast(3)) : name + "_expanded"
            guard let target = collection.target(of: name).flatMap(world.collection), case .int(let id)? = source[name],
                let referenced = Self.view(of: target, for: viewer).documents.first(where: { $0["id"] == .int(id) })
            else {
                result[key] = .null
                continue
            }
            result[key] = .object(referenced)
        }
        return result
    }

    // MARK: - The watch

    /// `GET /v1/watch?read=…`: each read by its own collection's rules.
    func watch(_ parameters: [ReferenceQuery.Parameter], by reader: Reader) -> Answer {
        let reads = (parameters.first { $0.name == "read" }?.value ?? "").split(separator: ",").map(String.init)
        var answer = Viewer.everyone
        var values = JSONObject()
        for name in reads {
            let parts = name.split(separator: "/", maxSplits: 1)
            let rest = parts[1].split(separator: ".", maxSplits: 1)
            guard let collection = world.collection(String(parts[0])), let id = Int(rest[0]) else {
                return .refused(tokenRequired: false, invalid: ["read"])
            }
            let field = rest.count == 2 ? String(rest[1]) : nil
            var viewer = Viewer.everyone
            if collection.visibility != .all {
                switch reader {
                case .anonymous: viewer = .publicFields
                case .holder: viewer = .holder
                case .refused(let code): return .tokenError(code: code)
                }
                answer = viewer
            }
            if viewer == .publicFields {
                if !collection.hasPublicFields { return .refused(tokenRequired: true, invalid: []) }
                if let field, !Self.sees(field, of: collection, viewer) {
                    return .refused(tokenRequired: true, invalid: [])
                }
            }
            let document = Self.view(of: collection, for: viewer).documents.first { $0["id"] == .int(id) }
            if let field {
                values[name] = document?[field] ?? .null
            } else {
                values[name] = document.map(JSONValue.object) ?? .null
            }
        }
        return .ok(.values(values), answer)
    }

    // MARK: - What a viewer sees

    /// Whether `viewer` may see (and name) `field` of `collection`.
    static func sees(_ field: String, of collection: AccessWorld.Collection, _ viewer: Viewer) -> Bool {
        guard viewer == .publicFields else { return true }
        switch collection.visibility {
        case .all: return true
        case .some(let names): return field == "id" || names.contains(field)
        case .none: return false
        }
    }

    /// `collection` as `viewer` sees it: each document with only the fields it may see.
    static func view(of collection: AccessWorld.Collection, for viewer: Viewer) -> ReferenceQuery.Collection {
        let documents = collection.documents.map { document in
            JSONObject(document.members.filter { sees($0.key, of: collection, viewer) }.map { ($0.key, $0.value) })
        }
        return ReferenceQuery.Collection(
            name: collection.name, sort: collection.sort, pageSize: collection.pageSize, documents: documents)
    }

    /// Whether some document of `view` has `field` at the top level, or it is `id`.
    static func isKnown(_ field: String, in view: ReferenceQuery.Collection) -> Bool {
        field == "id" || view.documents.contains { $0[field] != nil }
    }

    /// The field a filter parameter is on: the name, when it is a known field, else the
    /// name without a known operator suffix; of a dotted name, the first part.
    static func filteredField(_ name: String, known: (String) -> Bool) -> String {
        let top = String(name.prefix { $0 != "." })
        if top != name || known(name) { return top }
        for suffix in ["_ne", "_gte", "_gt", "_lte", "_lt", "_like"] where name.hasSuffix(suffix) {
            return String(name.dropLast(suffix.count))
        }
        return name
    }
}
