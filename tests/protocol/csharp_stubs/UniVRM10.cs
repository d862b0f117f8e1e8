// Compile-time stand-ins for the UniVRM 1.0 expression API (namespace UniVRM10, assembly VRM10).
namespace UniVRM10
{
    public enum ExpressionPreset
    {
        custom, happy, angry, sad, relaxed, surprised, aa, ih, ou, ee, oh, blink, blinkLeft, blinkRight,
        lookUp, lookDown, lookLeft, lookRight, neutral
    }

    public struct ExpressionKey
    {
        public readonly ExpressionPreset Preset;
        public readonly string Name;

        public ExpressionKey(ExpressionPreset preset, string customName = null)
        {
            Preset = preset;
            Name = customName ?? preset.ToString();
        }

        public static ExpressionKey CreateFromPreset(ExpressionPreset preset) { return new ExpressionKey(preset); }
        public static ExpressionKey Happy { get { return new ExpressionKey(ExpressionPreset.happy); } }
        public static ExpressionKey Angry { get { return new ExpressionKey(ExpressionPreset.angry); } }
        public static ExpressionKey Sad { get { return new ExpressionKey(ExpressionPreset.sad); } }
        public static ExpressionKey Relaxed { get { return new ExpressionKey(ExpressionPreset.relaxed); } }
        public static ExpressionKey Surprised { get { return new ExpressionKey(ExpressionPreset.surprised); } }
        public static ExpressionKey Neutral { get { return new ExpressionKey(ExpressionPreset.neutral); } }
    }

    public sealed class Vrm10RuntimeExpression
    {
        public void SetWeight(ExpressionKey expressionKey, float weight) { }
        public float GetWeight(ExpressionKey expressionKey) { return 0f; }
    }

    public sealed class Vrm10Runtime
    {
        public Vrm10RuntimeExpression Expression { get { return null; } }
    }

    public class Vrm10Instance : UnityEngine.MonoBehaviour
    {
        public Vrm10Runtime Runtime { get { return null; } }
    }
}
