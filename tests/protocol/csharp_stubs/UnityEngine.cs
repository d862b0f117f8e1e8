// Compile-time stand-ins for the UnityEngine types the Machi package uses (signatures as in Unity 2021.3).
using System;

namespace UnityEngine
{
    public class Object
    {
        public string name { get; set; }
        public static implicit operator bool(Object o) { return !ReferenceEquals(o, null); }
    }

    public class Component : Object
    {
        public Transform transform { get { return null; } }
        public GameObject gameObject { get { return null; } }
        public T GetComponent<T>() { return default(T); }
        public T GetComponentInChildren<T>() { return default(T); }
    }

    public class Behaviour : Component
    {
        public bool enabled { get; set; }
        public bool isActiveAndEnabled { get { return true; } }
    }

    public class MonoBehaviour : Behaviour { }

    public sealed class GameObject : Object
    {
        public Transform transform { get { return null; } }
        public T GetComponent<T>() { return default(T); }
    }

    public class Transform : Component
    {
        public Vector3 position { get; set; }
        public Vector3 forward { get; set; }
        public Quaternion rotation { get; set; }
    }

    public class Collider : Component { }

    public struct Quaternion
    {
        public float x, y, z, w;
        public static Quaternion LookRotation(Vector3 forward) { return default(Quaternion); }
        public static Quaternion Slerp(Quaternion a, Quaternion b, float t) { return a; }
        public static float Angle(Quaternion a, Quaternion b) { return 0f; }
        public static Quaternion RotateTowards(Quaternion from, Quaternion to, float maxDegreesDelta) { return to; }
    }

    public struct Vector3
    {
        public float x, y, z;
        public Vector3(float x, float y, float z) { this.x = x; this.y = y; this.z = z; }
        public static Vector3 zero { get { return new Vector3(0, 0, 0); } }
        public static Vector3 up { get { return new Vector3(0, 1, 0); } }
        public float magnitude { get { return (float)Math.Sqrt(x * x + y * y + z * z); } }
        public float sqrMagnitude { get { return x * x + y * y + z * z; } }
        public Vector3 normalized { get { float m = magnitude; return m > 0 ? this / m : zero; } }
        public static float Distance(Vector3 a, Vector3 b) { return (a - b).magnitude; }
        public static float Angle(Vector3 from, Vector3 to) { return 0f; }
        public static float Dot(Vector3 a, Vector3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
        public static Vector3 ProjectOnPlane(Vector3 v, Vector3 normal) { return v; }
        public static Vector3 operator +(Vector3 a, Vector3 b) { return new Vector3(a.x + b.x, a.y + b.y, a.z + b.z); }
        public static Vector3 operator -(Vector3 a, Vector3 b) { return new Vector3(a.x - b.x, a.y - b.y, a.z - b.z); }
        public static Vector3 operator *(Vector3 a, float d) { return new Vector3(a.x * d, a.y * d, a.z * d); }
        public static Vector3 operator /(Vector3 a, float d) { return new Vector3(a.x / d, a.y / d, a.z / d); }
    }

    public struct Vector2
    {
        public float x, y;
    }

    public struct RaycastHit
    {
        public Collider collider { get { return null; } }
        public Transform transform { get { return null; } }
        public float distance { get { return 0f; } }
    }

    public struct LayerMask
    {
        public int value { get; set; }
        public static implicit operator int(LayerMask mask) { return mask.value; }
    }

    public enum QueryTriggerInteraction { UseGlobal, Ignore, Collide }

    public static class Physics
    {
        public const int DefaultRaycastLayers = -5;
        public static bool Raycast(Vector3 origin, Vector3 direction, out RaycastHit hitInfo, float maxDistance,
            int layerMask, QueryTriggerInteraction queryTriggerInteraction)
        {
            hitInfo = default(RaycastHit);
            return false;
        }
        public static bool Raycast(Vector3 origin, Vector3 direction, out RaycastHit hitInfo, float maxDistance)
        {
            hitInfo = default(RaycastHit);
            return false;
        }
    }

    public static class Time
    {
        public static float time { get { return 0f; } }
        public static float deltaTime { get { return 0f; } }
        public static float unscaledTime { get { return 0f; } }
    }

    public static class Mathf
    {
        public static float Clamp01(float v) { return v < 0 ? 0 : v > 1 ? 1 : v; }
        public static float Clamp(float v, float min, float max) { return v < min ? min : v > max ? max : v; }
        public static float Lerp(float a, float b, float t) { return a + (b - a) * Clamp01(t); }
        public static float MoveTowards(float current, float target, float maxDelta) { return target; }
        public static float Max(float a, float b) { return a > b ? a : b; }
        public static float Min(float a, float b) { return a < b ? a : b; }
        public static float Repeat(float t, float length) { return t - (float)Math.Floor(t / length) * length; }
    }

    public static class Random
    {
        public static float Range(float min, float max) { return min; }
        public static int Range(int min, int max) { return min; }
        public static Vector2 insideUnitCircle { get { return default(Vector2); } }
    }

    public static class Debug
    {
        public static void Log(object message) { }
        public static void LogWarning(object message) { }
        public static void LogError(object message) { }
        public static void LogException(Exception exception) { }
    }

    public class AsyncOperation
    {
        public bool isDone { get { return true; } }
        public float progress { get { return 1f; } }
    }

    public enum AnimatorControllerParameterType { Float = 1, Int = 3, Bool = 4, Trigger = 9 }

    public sealed class AnimatorControllerParameter
    {
        public string name { get; set; }
        public AnimatorControllerParameterType type { get; set; }
    }

    public class Animator : Behaviour
    {
        public AnimatorControllerParameter[] parameters { get { return new AnimatorControllerParameter[0]; } }
        public void SetTrigger(string name) { }
        public void SetTrigger(int id) { }
        public void ResetTrigger(string name) { }
        public static int StringToHash(string name) { return 0; }
    }

    // Immediate-mode GUI (UnityEngine.IMGUIModule, part of every Unity: no package needed).
    public struct Rect
    {
        public Rect(float x, float y, float width, float height) { this.x = x; this.y = y; this.width = width; this.height = height; }
        public float x { get; set; }
        public float y { get; set; }
        public float width { get; set; }
        public float height { get; set; }
    }

    public enum EventType { MouseDown = 0, MouseUp = 1, MouseMove = 2, MouseDrag = 3, KeyDown = 4, KeyUp = 5, ScrollWheel = 6, Repaint = 7, Layout = 8 }

    public enum KeyCode { None = 0, Backspace = 8, Tab = 9, Return = 13, Escape = 27, Space = 32, KeypadEnter = 271 }

    public sealed class Event
    {
        public static Event current { get { return null; } set { } }
        public EventType type { get; set; }
        public KeyCode keyCode { get; set; }
        public char character { get; set; }
        public void Use() { }
    }

    public sealed class GUILayoutOption { }

    public class GUI
    {
        public static bool enabled { get; set; }
        public static void Box(Rect position, string text) { }
        public static void Label(Rect position, string text) { }
        public static void SetNextControlName(string name) { }
        public static string GetNameOfFocusedControl() { return ""; }
        public static void FocusControl(string name) { }
    }

    public class GUILayout
    {
        public static void BeginArea(Rect screenRect) { }
        public static void EndArea() { }
        public static void BeginHorizontal(params GUILayoutOption[] options) { }
        public static void EndHorizontal() { }
        public static void Label(string text, params GUILayoutOption[] options) { }
        public static string TextField(string text, params GUILayoutOption[] options) { return text; }
        public static string TextField(string text, int maxLength, params GUILayoutOption[] options) { return text; }
        public static bool Button(string text, params GUILayoutOption[] options) { return false; }
        public static void FlexibleSpace() { }
        public static GUILayoutOption Width(float width) { return new GUILayoutOption(); }
    }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class SerializeField : Attribute { }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class HeaderAttribute : Attribute { public HeaderAttribute(string header) { } }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class TooltipAttribute : Attribute { public TooltipAttribute(string tooltip) { } }

    [AttributeUsage(AttributeTargets.Field)]
    public sealed class RangeAttribute : Attribute { public RangeAttribute(float min, float max) { } }

    [AttributeUsage(AttributeTargets.Class, AllowMultiple = true)]
    public sealed class RequireComponent : Attribute { public RequireComponent(Type type) { } }

    [AttributeUsage(AttributeTargets.Class)]
    public sealed class DisallowMultipleComponent : Attribute { }
}

namespace UnityEngine.Events
{
    public delegate void UnityAction();
    public delegate void UnityAction<T0, T1>(T0 arg0, T1 arg1);

    [Serializable]
    public abstract class UnityEventBase
    {
        public void RemoveAllListeners() { }
    }

    [Serializable]
    public class UnityEvent : UnityEventBase
    {
        public void AddListener(UnityAction call) { }
        public void RemoveListener(UnityAction call) { }
        public void Invoke() { }
    }

    [Serializable]
    public class UnityEvent<T0, T1> : UnityEventBase
    {
        public void AddListener(UnityAction<T0, T1> call) { }
        public void RemoveListener(UnityAction<T0, T1> call) { }
        public void Invoke(T0 arg0, T1 arg1) { }
    }
}

namespace UnityEngine.AI
{
    public enum NavMeshPathStatus { PathComplete = 0, PathPartial = 1, PathInvalid = 2 }

    public class NavMeshAgent : Behaviour
    {
        public NavMeshPathStatus pathStatus { get { return NavMeshPathStatus.PathComplete; } }
        public float speed { get; set; }
        public float stoppingDistance { get; set; }
        public float remainingDistance { get { return 0f; } }
        public bool pathPending { get { return false; } }
        public bool hasPath { get { return false; } }
        public bool isStopped { get; set; }
        public Vector3 destination { get; set; }
        public bool SetDestination(Vector3 target) { return true; }
        public void ResetPath() { }
    }

    public struct NavMeshHit
    {
        public Vector3 position { get { return default(Vector3); } }
    }

    public static class NavMesh
    {
        public const int AllAreas = -1;
        public static bool SamplePosition(Vector3 sourcePosition, out NavMeshHit hit, float maxDistance, int areaMask)
        {
            hit = default(NavMeshHit);
            return false;
        }
    }
}
