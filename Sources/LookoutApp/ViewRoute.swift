import LookoutHTTP
import LookoutStore

/// What a held view (a long-poll, an event stream) needs from the route that opened it:
/// its rendering, and the logging and counting of its answers.
///
/// One object for as long as the view is held, where a closure for each part was three
/// allocations per held poll, each freed when it is answered.
protocol ViewRoute: AnyObject, Sendable {
    /// The view, rendered from `snapshot`.
    func render(_ snapshot: StoreSnapshot) throws -> RenderedView
    /// What a shared rendering of it depends on in its request.
    var identity: RenderIdentity { get }
    /// The response for `result`, logged and counted.
    func finish(_ result: Result<HTTPResponse, any Error>) -> HTTPResponse
    /// Logs and counts an answer made elsewhere (one that many held polls share), by its status.
    func counted(_ status: Int)
}
