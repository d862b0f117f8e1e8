using Machi.Protocol;
using UniVRM10;
using UnityEngine;

namespace Machi.Samples
{
    /// <summary>Shows a reply's emotion on a VRM 1.0 face. The server's emotions are the VRM 1.0 expression
    /// presets (neutral, happy, angry, sad, relaxed, surprised), so the mapping is one to one; weights blend
    /// over `blendSeconds` so faces do not snap.</summary>
    public sealed class VrmEmotionMapper : MonoBehaviour
    {
        public Vrm10Instance vrm;
        [Range(0f, 1f)]
        public float intensity = 1f;
        public float blendSeconds = 0.25f;

        private static readonly ExpressionKey[] Keys =
        {
            ExpressionKey.Happy, ExpressionKey.Angry, ExpressionKey.Sad, ExpressionKey.Relaxed,
            ExpressionKey.Surprised, ExpressionKey.Neutral
        };

        private readonly float[] _target = new float[Keys.Length];
        private readonly float[] _current = new float[Keys.Length];

        /// <summary>The expression key a reply's emotion maps to.</summary>
        public static ExpressionKey KeyFor(Emotion emotion)
        {
            switch (emotion)
            {
                case Emotion.Happy: return ExpressionKey.Happy;
                case Emotion.Angry: return ExpressionKey.Angry;
                case Emotion.Sad: return ExpressionKey.Sad;
                case Emotion.Relaxed: return ExpressionKey.Relaxed;
                case Emotion.Surprised: return ExpressionKey.Surprised;
                default: return ExpressionKey.Neutral;
            }
        }

        /// <summary>Blend towards `emotion` at full intensity (the other presets fade out).</summary>
        public void Show(Emotion emotion)
        {
            ExpressionKey key = KeyFor(emotion);
            for (int i = 0; i < Keys.Length; i++)
            {
                _target[i] = Keys[i].Preset == key.Preset ? intensity : 0f;
            }
        }

        public void Show(TurnResult reply)
        {
            Show(reply.Emotion);
        }

        private void Update()
        {
            if (vrm == null || vrm.Runtime == null)
            {
                return;
            }
            float step = blendSeconds <= 0f ? 1f : Time.deltaTime / blendSeconds;
            for (int i = 0; i < Keys.Length; i++)
            {
                _current[i] = Mathf.MoveTowards(_current[i], _target[i], step);
                vrm.Runtime.Expression.SetWeight(Keys[i], _current[i]);
            }
        }
    }
}
