// Compile-time stand-ins for the parts of Cysharp UniTask 2.5 the Machi package uses (same names and
// signatures). The async builders make `async UniTask` methods compile; nothing here runs a player loop.
using System;
using System.Runtime.CompilerServices;
using System.Threading;
using Cysharp.Threading.Tasks.CompilerServices;
using UnityEngine;
using UnityEngine.Networking;

namespace Cysharp.Threading.Tasks
{
    public enum PlayerLoopTiming { Initialization, EarlyUpdate, FixedUpdate, PreUpdate, Update, PreLateUpdate, PostLateUpdate }

    public enum DelayType { DeltaTime, UnscaledDeltaTime, Realtime }

    [AsyncMethodBuilder(typeof(AsyncUniTaskMethodBuilder))]
    public struct UniTask
    {
        public static UniTask CompletedTask { get { return default(UniTask); } }
        public Awaiter GetAwaiter() { return default(Awaiter); }

        public static UniTask Delay(TimeSpan delayTimeSpan, bool ignoreTimeScale = false,
            PlayerLoopTiming delayTiming = PlayerLoopTiming.Update,
            CancellationToken cancellationToken = default(CancellationToken), bool cancelImmediately = false)
        {
            return default(UniTask);
        }

        public static UniTask Delay(int millisecondsDelay, bool ignoreTimeScale = false,
            PlayerLoopTiming delayTiming = PlayerLoopTiming.Update,
            CancellationToken cancellationToken = default(CancellationToken), bool cancelImmediately = false)
        {
            return default(UniTask);
        }

        public static UniTask Yield(PlayerLoopTiming timing, CancellationToken cancellationToken) { return default(UniTask); }
        public static UniTask<T> FromResult<T>(T value) { return default(UniTask<T>); }
        public static UniTask WaitUntil(Func<bool> predicate, PlayerLoopTiming timing = PlayerLoopTiming.Update,
            CancellationToken cancellationToken = default(CancellationToken), bool cancelImmediately = false)
        {
            return default(UniTask);
        }

        public struct Awaiter : ICriticalNotifyCompletion
        {
            public bool IsCompleted { get { return true; } }
            public void GetResult() { }
            public void OnCompleted(Action continuation) { }
            public void UnsafeOnCompleted(Action continuation) { }
        }
    }

    [AsyncMethodBuilder(typeof(AsyncUniTaskMethodBuilder<>))]
    public struct UniTask<T>
    {
        public Awaiter GetAwaiter() { return default(Awaiter); }

        public struct Awaiter : ICriticalNotifyCompletion
        {
            public bool IsCompleted { get { return true; } }
            public T GetResult() { return default(T); }
            public void OnCompleted(Action continuation) { }
            public void UnsafeOnCompleted(Action continuation) { }
        }
    }

    [AsyncMethodBuilder(typeof(AsyncUniTaskVoidMethodBuilder))]
    public struct UniTaskVoid
    {
        public void Forget() { }
    }

    public class UniTaskCompletionSource<T>
    {
        public UniTask<T> Task { get { return default(UniTask<T>); } }
        public bool TrySetResult(T result) { return true; }
        public bool TrySetException(Exception exception) { return true; }
        public bool TrySetCanceled(CancellationToken cancellationToken = default(CancellationToken)) { return true; }
    }

    public class UniTaskCompletionSource
    {
        public UniTask Task { get { return default(UniTask); } }
        public bool TrySetResult() { return true; }
        public bool TrySetException(Exception exception) { return true; }
        public bool TrySetCanceled(CancellationToken cancellationToken = default(CancellationToken)) { return true; }
    }

    public static class UniTaskExtensions
    {
        public static void Forget(this UniTask task) { }
        public static void Forget<T>(this UniTask<T> task) { }
    }

    public static class CancellationTokenSourceExtensions
    {
        public static IDisposable CancelAfterSlim(this CancellationTokenSource cts, TimeSpan delayTimeSpan,
            DelayType delayType = DelayType.DeltaTime, PlayerLoopTiming delayTiming = PlayerLoopTiming.Update)
        {
            return new CancellationTokenSource();
        }

        public static IDisposable CancelAfterSlim(this CancellationTokenSource cts, int millisecondsDelay,
            DelayType delayType = DelayType.DeltaTime, PlayerLoopTiming delayTiming = PlayerLoopTiming.Update)
        {
            return new CancellationTokenSource();
        }
    }

    public static class CancellationTokenSourceMonoBehaviourExtensions
    {
        public static CancellationToken GetCancellationTokenOnDestroy(this MonoBehaviour component)
        {
            return CancellationToken.None;
        }
    }

    public static class UnityAsyncExtensions
    {
        public static UniTask<UnityWebRequest> ToUniTask(this UnityWebRequestAsyncOperation asyncOperation,
            IProgress<float> progress = null, PlayerLoopTiming timing = PlayerLoopTiming.Update,
            CancellationToken cancellationToken = default(CancellationToken), bool cancelImmediately = false)
        {
            return default(UniTask<UnityWebRequest>);
        }

        public static UniTask<UnityWebRequest> WithCancellation(this UnityWebRequestAsyncOperation asyncOperation,
            CancellationToken cancellationToken)
        {
            return default(UniTask<UnityWebRequest>);
        }
    }

    public class UnityWebRequestException : Exception
    {
        public UnityWebRequest UnityWebRequest { get; private set; }
        public UnityWebRequest.Result Result { get; private set; }
        public string Error { get; private set; }
        public string Text { get; private set; }
        public long ResponseCode { get; private set; }
    }
}

namespace Cysharp.Threading.Tasks.CompilerServices
{
    public struct AsyncUniTaskMethodBuilder
    {
        public static AsyncUniTaskMethodBuilder Create() { return default(AsyncUniTaskMethodBuilder); }
        public UniTask Task { get { return default(UniTask); } }
        public void SetException(Exception exception) { }
        public void SetResult() { }
        public void AwaitOnCompleted<TAwaiter, TStateMachine>(ref TAwaiter awaiter, ref TStateMachine stateMachine)
            where TAwaiter : INotifyCompletion where TStateMachine : IAsyncStateMachine { }
        public void AwaitUnsafeOnCompleted<TAwaiter, TStateMachine>(ref TAwaiter awaiter, ref TStateMachine stateMachine)
            where TAwaiter : ICriticalNotifyCompletion where TStateMachine : IAsyncStateMachine { }
        public void Start<TStateMachine>(ref TStateMachine stateMachine) where TStateMachine : IAsyncStateMachine { }
        public void SetStateMachine(IAsyncStateMachine stateMachine) { }
    }

    public struct AsyncUniTaskMethodBuilder<T>
    {
        public static AsyncUniTaskMethodBuilder<T> Create() { return default(AsyncUniTaskMethodBuilder<T>); }
        public UniTask<T> Task { get { return default(UniTask<T>); } }
        public void SetException(Exception exception) { }
        public void SetResult(T result) { }
        public void AwaitOnCompleted<TAwaiter, TStateMachine>(ref TAwaiter awaiter, ref TStateMachine stateMachine)
            where TAwaiter : INotifyCompletion where TStateMachine : IAsyncStateMachine { }
        public void AwaitUnsafeOnCompleted<TAwaiter, TStateMachine>(ref TAwaiter awaiter, ref TStateMachine stateMachine)
            where TAwaiter : ICriticalNotifyCompletion where TStateMachine : IAsyncStateMachine { }
        public void Start<TStateMachine>(ref TStateMachine stateMachine) where TStateMachine : IAsyncStateMachine { }
        public void SetStateMachine(IAsyncStateMachine stateMachine) { }
    }

    public struct AsyncUniTaskVoidMethodBuilder
    {
        public static AsyncUniTaskVoidMethodBuilder Create() { return default(AsyncUniTaskVoidMethodBuilder); }
        public UniTaskVoid Task { get { return default(UniTaskVoid); } }
        public void SetException(Exception exception) { }
        public void SetResult() { }
        public void AwaitOnCompleted<TAwaiter, TStateMachine>(ref TAwaiter awaiter, ref TStateMachine stateMachine)
            where TAwaiter : INotifyCompletion where TStateMachine : IAsyncStateMachine { }
        public void AwaitUnsafeOnCompleted<TAwaiter, TStateMachine>(ref TAwaiter awaiter, ref TStateMachine stateMachine)
            where TAwaiter : ICriticalNotifyCompletion where TStateMachine : IAsyncStateMachine { }
        public void Start<TStateMachine>(ref TStateMachine stateMachine) where TStateMachine : IAsyncStateMachine { }
        public void SetStateMachine(IAsyncStateMachine stateMachine) { }
    }
}
