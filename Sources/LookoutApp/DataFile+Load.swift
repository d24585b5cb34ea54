import LookoutDataFile
import LookoutJSON

#if canImport(Foundation)
    import Foundation
#endif

extension DataFile {
    /// Loads the file at `path`, or the demo data shipped with Lookout when `path` is nil.
    /// - Throws: ``StartupError`` naming the file and what is wrong with it.
    static func load(path: String?) throws(StartupError) -> DataFile {
        let location: String
        if let path {
            location = path
        } else {
            guard let bundled = Bundle.module.path(forResource: "demo-data", ofType: "json") else {
                throw StartupError("the bundled demo data is missing; pass --data-file")
            }
            location = bundled
        }
        guard let data = FileManager.default.contents(atPath: location) else {
            throw StartupError("cannot read data file \(location)")
        }
        do {
            return try DataFile(json: try JSONParser.parse(Array(data)))
        } catch let error as JSONParseError {
            throw StartupError("data file \(location) is not valid JSON: \(error)")
        } catch {
            throw StartupError("data file \(location): \(error)")
        }
    }
}
