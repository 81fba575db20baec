"""Chat backends and the LLM agent (brief Sec. 3.5; Sec. 7 item 9)."""

from __future__ import annotations

import base64

import pytest

from papers.cadcodeverify.agents import LLMAgent, extract_code, extract_json
from papers.cadcodeverify.backends import HFLocalChat, OpenAICompatChat
from papers.cadcodeverify.method import Answer, Question
from tests.helpers import save_tiny_llama
from tests.papers.cadcodeverify.stub_server import StubChat, last_user_text

PNG = b"\x89PNG\r\n\x1a\nfake"


def test_openai_client_sends_image_url_parts_and_returns_the_text(monkeypatch):
    monkeypatch.setenv("CCV_TEST_KEY", "sk-test")
    with StubChat(lambda body: "stub says hi") as stub:
        chat = OpenAICompatChat(stub.base_url, "stub-model", "CCV_TEST_KEY", timeout=10)
        messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "look"}]
        reply = chat.complete(messages, images=(PNG, PNG), temperature=0.2, max_tokens=7)
    assert reply == "stub says hi"
    request = stub.requests[0]
    assert request["path"] == "/v1/chat/completions" and request["model"] == "stub-model"
    assert request["temperature"] == 0.2 and request["max_tokens"] == 7
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    parts = request["messages"][-1]["content"]
    assert parts[0] == {"type": "text", "text": "look"}
    urls = [p["image_url"]["url"] for p in parts[1:]]
    assert len(urls) == 2 and all(p["type"] == "image_url" for p in parts[1:])
    assert base64.b64decode(urls[0].split(",", 1)[1]) == PNG
    assert urls[0].startswith("data:image/png;base64,")
    assert request["messages"][0] == {"role": "system", "content": "sys"}  # untouched


def test_json_parsing_survives_prose_around_the_block():
    text = 'Sure! Here you go:\n[{"answer": "No", "reason": "no hole"}] Hope that helps {x'
    assert extract_json(text) == [{"answer": "No", "reason": "no hole"}]
    assert extract_json('The {broken then {"a": [1, 2]} end') == {"a": [1, 2]}
    with pytest.raises(ValueError, match="no JSON"):
        extract_json("no json here [at all")
    assert extract_code("text\n```python\nx = 1\n```\nmore") == "x = 1\n"


def test_malformed_answer_is_retried_once_then_read_as_unclear():
    replies = iter(["I think yes", "still no json", 'ok [{"answer": "No"}, {"answer": "yes"}]'])
    with StubChat(lambda body: next(replies)) as stub:
        agent = LLMAgent(OpenAICompatChat(stub.base_url, "m", None, 10))
        questions = [Question("Is it a box?"), Question("Is there a hole?")]
        first = agent.answer(questions, (PNG,), "a box")  # two malformed replies
        assert [a.label for a in first] == ["Unclear", "Unclear"]
        assert len(stub.requests) == 2  # asked once, retried once
        second = agent.answer(questions, (PNG,), "a box")
        assert [a.label for a in second] == ["No", "Yes"]


def test_roles_use_the_right_inputs():
    seen = []

    def reply(body):
        text = last_user_text(body)
        seen.append((text.splitlines()[0], isinstance(body["messages"][-1]["content"], list)))
        if text.startswith("TASK: write validation questions"):
            return 'Questions: ["Is it a box?", "Is there a hole?"]'
        return "```python\nprint(1)\n```"

    with StubChat(reply) as stub:
        agent = LLMAgent(OpenAICompatChat(stub.base_url, "m", None, 10))
        questions = agent.make_questions("a box with a hole")
        assert [q.text for q in questions] == ["Is it a box?", "Is there a hole?"]
        feedback = agent.write_feedback(questions[:1], [Answer("No", "round")])
        assert feedback.fields == ("Is it a box?",)
        assert agent.generate_code("a box") == "print(1)\n"
    # question generation sees no image (the prompt alone)
    assert seen[0] == ("TASK: write validation questions.", False)


def test_fewer_than_two_questions_count_as_none():
    with StubChat(lambda body: '["Is it a box?"]') as stub:
        agent = LLMAgent(OpenAICompatChat(stub.base_url, "m", None, 10))
        assert agent.make_questions("a box") == []


def test_hf_local_chat_loads_a_tiny_text_model_from_a_folder(tmp_path):
    template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )
    save_tiny_llama(tmp_path, ["user: write code", "assistant: box"] * 20, "</s>", template)
    chat = HFLocalChat(tmp_path)
    reply = chat.complete([{"role": "user", "content": "write code"}], max_tokens=4)
    assert isinstance(reply, str) and not chat.is_vlm
    with pytest.raises(ValueError, match="text-only model"):
        chat.complete([{"role": "user", "content": "look"}], images=(PNG,), max_tokens=2)
    with pytest.raises(FileNotFoundError, match="model_dir"):
        HFLocalChat(tmp_path / "absent")


def test_a_separate_verifier_samples_with_its_own_settings():
    """cadprompt.verifier.temperature and max_tokens reach the verifier's requests; the
    generator keeps its own (one model: the generator's settings for every role)."""
    with (
        StubChat(lambda body: "```python\nx = 1\n```") as gen_stub,
        StubChat(lambda body: '["Is there a hole?"]') as ver_stub,
    ):
        agent = LLMAgent(
            OpenAICompatChat(gen_stub.base_url, "g", None, 10),
            OpenAICompatChat(ver_stub.base_url, "v", None, 10),
            gen={"temperature": 0.0, "max_tokens": 50},
            verifier_gen={"temperature": 0.7, "max_tokens": 9},
        )
        agent.generate_code("a plate")
        agent.make_questions("a plate")
    assert (gen_stub.requests[0]["temperature"], gen_stub.requests[0]["max_tokens"]) == (0.0, 50)
    assert (ver_stub.requests[0]["temperature"], ver_stub.requests[0]["max_tokens"]) == (0.7, 9)
    one_model = LLMAgent(object(), gen={"temperature": 0.2})
    assert one_model.verifier_gen == one_model.gen
