using Machi.Protocol;
using UniVRM10;
using UnityEngine;

namespace Machi.Samples
{
    /// <summary>Shows an agent's emotion on a VRM 1.0 face. While a line is shown, the face is that turn
    /// reply's `emotion`; between lines it is the resting face, the `vrm_emotion` of the agent's
    /// emotion.updated events (see MachiEvents). The server's emotions are the VRM 1.0 expression presets
    /// (neutral, happy, angry, sad, relaxed, surprised), so the mapping is one to one; weights blend over
    /// `blendSeconds` so faces do not snap.</summary>
    public sealed class VrmEmotionMapper : MonoBehaviour
    {
        public Vrm10Instance vrm;
        [Range(0f, 1f)]
        public float intensity = 1f;
        public float blendSeconds = 0.25f;
        [Tooltip("Optional: the scene's MachiEvents, whose emotion.updated events set the resting face.")]
        public MachiEvents events;
        [Tooltip("The agent whose emotion.updated events this face follows.")]
        public string agentId = "aoi";

        private static readonly ExpressionKey[] Keys =
        {
            ExpressionKey.Happy, ExpressionKey.Angry, ExpressionKey.Sad, ExpressionKey.Relaxed,
            ExpressionKey.Surprised, ExpressionKey.Neutral
        };

        private readonly float[] _target = new float[Keys.Length];
        private readonly float[] _current = new float[Keys.Length];
        private Emotion _resting = Emotion.Neutral;
        private bool _lineShown;

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

        /// <summary>A `vrm_emotion` string (emotion.updated, GET /v1/agents/{id}/emotion) as an Emotion.</summary>
        public static Emotion Parse(string vrmEmotion)
        {
            switch (vrmEmotion)
            {
                case "happy": return Emotion.Happy;
                case "angry": return Emotion.Angry;
                case "sad": return Emotion.Sad;
                case "relaxed": return Emotion.Relaxed;
                case "surprised": return Emotion.Surprised;
                default: return Emotion.Neutral;
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

        /// <summary>The face for this line: the reply's `emotion`, until EndLine.</summary>
        public void Show(TurnResult reply)
        {
            _lineShown = true;
            Show(reply.Emotion);
        }

        /// <summary>The face for an agent's reply to a visitor: its `emotion`, until EndLine.</summary>
        public void Show(PlayerTurnResult reply)
        {
            _lineShown = true;
            Show(reply.Emotion);
        }

        /// <summary>The line is over: back to the resting face.</summary>
        public void EndLine()
        {
            _lineShown = false;
            Show(_resting);
        }

        /// <summary>The resting face between lines; a line being shown keeps its own face until it ends.</summary>
        public void Rest(string vrmEmotion)
        {
            _resting = Parse(vrmEmotion);
            if (!_lineShown)
            {
                Show(_resting);
            }
        }

        private void OnEnable()
        {
            if (events != null)
            {
                events.Received += OnEvent;
            }
        }

        private void OnDisable()
        {
            if (events != null)
            {
                events.Received -= OnEvent;
            }
        }

        private void OnEvent(MachiEvent ev)
        {
            if (ev.Type == "emotion.updated" && ev.Text("agent_id") == agentId)
            {
                Rest(ev.Text("vrm_emotion"));
            }
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
