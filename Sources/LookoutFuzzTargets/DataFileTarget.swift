import LookoutDataFile
import LookoutJSON
import LookoutStore

/// Data files (`--data-file`, `lookout import`, `lookout export`).
///
/// A parsed file either gives collections and users or throws ``DataFileError``. What it
/// gives, written with `DataFile.encode` (as `lookout export` writes it), reads back as
/// the same collections, options, documents and users; and a store is either built
/// from the collections, holding each of their documents, or refused with
/// ``StoreError``.
enum DataFileTarget {
    static func check(_ input: [UInt8]) throws(PropertyViolation) {
        guard let json = try JSONTarget.parse(input) else { return }
        let file: DataFile
        do {
            file = try DataFile(json: json)
        } catch {
            return
        }
        let exported = DataFile.encode(
            collections: file.collections.map { ($0.name, $0.options, $0.documents) }, users: file.users)
        let reread: DataFile
        do {
            reread = try DataFile(json: exported)
        } catch {
            throw PropertyViolation("an exported file is refused: \(error)")
        }
        try PropertyViolation.require(
            reread.users == file.users,
            "the users read back are \(reread.users.map(\.email)), not \(file.users.map(\.email))")
        try PropertyViolation.require(
            reread.collections.count == file.collections.count, "an exported file has another number of collections")
        for (again, collection) in zip(reread.collections, file.collections) {
            try PropertyViolation.require(
                again.name == collection.name && again.options == collection.options,
                "collection \(excerpt(collection.name)) reads back as \(excerpt(again.name)) with other options")
            try PropertyViolation.require(
                again.documents.count == collection.documents.count
                    && zip(again.documents, collection.documents).allSatisfy { equivalent(.object($0), .object($1)) },
                "collection \(excerpt(collection.name)) reads back with other documents")
        }
        let store: Store
        do {
            store = try Store(file.collections, epoch: "f1")
        } catch {
            return
        }
        let snapshot = store.snapshot()
        var reads = ReadSet()
        for collection in file.collections {
            try PropertyViolation.require(
                snapshot.ids(in: collection.name, reads: &reads)?.count == collection.documents.count,
                "the store does not hold the documents of \(excerpt(collection.name))")
        }
    }
}
