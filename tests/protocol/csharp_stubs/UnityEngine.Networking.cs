// Compile-time stand-ins for UnityEngine.Networking (UnityWebRequest and its handlers), Unity 2021.3.
using System;

namespace UnityEngine.Networking
{
    public class UnityWebRequest : IDisposable
    {
        public enum Result { InProgress, Success, ConnectionError, ProtocolError, DataProcessingError }

        public const string kHttpVerbGET = "GET";
        public const string kHttpVerbPOST = "POST";
        public const string kHttpVerbPUT = "PUT";
        public const string kHttpVerbDELETE = "DELETE";

        public UnityWebRequest(string url, string method) { this.url = url; this.method = method; }

        public string url { get; set; }
        public string method { get; set; }
        public int timeout { get; set; }
        public DownloadHandler downloadHandler { get; set; }
        public UploadHandler uploadHandler { get; set; }
        public bool disposeDownloadHandlerOnDispose { get; set; }
        public bool disposeUploadHandlerOnDispose { get; set; }
        public Result result { get { return Result.InProgress; } }
        public long responseCode { get { return 0; } }
        public string error { get { return null; } }
        public bool isDone { get { return false; } }

        public void SetRequestHeader(string name, string value) { }
        public string GetResponseHeader(string name) { return null; }
        public UnityWebRequestAsyncOperation SendWebRequest() { return new UnityWebRequestAsyncOperation(); }
        public void Abort() { }
        public void Dispose() { }
    }

    public class UnityWebRequestAsyncOperation : AsyncOperation
    {
        public UnityWebRequest webRequest { get { return null; } }
    }

    public class DownloadHandler : IDisposable
    {
        public string text { get { return GetText(); } }
        public byte[] data { get { return GetData(); } }
        public bool isDone { get { return false; } }
        protected virtual string GetText() { return null; }
        protected virtual byte[] GetData() { return null; }
        protected virtual bool ReceiveData(byte[] data, int dataLength) { return true; }
        protected virtual void CompleteContent() { }
        public void Dispose() { }
    }

    public sealed class DownloadHandlerBuffer : DownloadHandler { }

    public class DownloadHandlerScript : DownloadHandler
    {
        public DownloadHandlerScript() { }
        public DownloadHandlerScript(byte[] preallocatedBuffer) { }
    }

    public class UploadHandler : IDisposable
    {
        public string contentType { get; set; }
        public byte[] data { get { return null; } }
        public void Dispose() { }
    }

    public sealed class UploadHandlerRaw : UploadHandler
    {
        public UploadHandlerRaw(byte[] data) { }
    }
}
